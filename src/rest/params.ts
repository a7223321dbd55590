// Path parameters. Malformed values are 400 (bob answers some with plain-text
// rejections or treats them as 404); values that are well-formed but name
// nothing are left to the routes, which answer 404.
import { badRequest } from './status-ext';

const U32_MAX = 4294967295n;
const U64_MAX = 18446744073709551615n;

function unsigned(text: string, max: bigint, what: string): bigint {
  if (!/^\d+$/.test(text)) throw badRequest(`invalid ${what}: ${JSON.stringify(clip(text))} is not an unsigned integer`);
  // Leading zeros are allowed (as in bob's integer parsing and in decimal keys).
  const digits = text.replace(/^0+(?=\d)/, '');
  if (digits.length > 20 || BigInt(digits) > max) throw badRequest(`invalid ${what}: ${clip(text)} is out of range`);
  return BigInt(digits);
}

// Error messages quote at most this much of a hostile parameter.
function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}… (${text.length} characters)` : text;
}

export function vdiskIdParam(text: string): number {
  return Number(unsigned(text, U32_MAX, 'vdisk id'));
}

/** A u64 timestamp; values beyond 2^53 are valid but can name no partition: returned as null. */
export function timestampParam(text: string): number | null {
  const v = unsigned(text, U64_MAX, 'timestamp');
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(v);
}
