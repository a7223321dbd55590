// The headers that describe a stored value (RFC 9110 §8): its ETag,
// Last-Modified and Content-Type, built once per record. A record served
// again — from the records a vdisk keeps — is the same object, and building
// these costs a GET more than finding the value: the ETag is put together
// from three numbers, the type guessed from the value's first bytes, and a
// header value made of many pieces is flattened and checked again on its
// way out.
import { StoredValue } from '../../model/version';
import { sniffContentType } from '../content-type';
import { etagOf, httpDateOf } from './validators';

export interface Representation {
  readonly etag: string;
  /** Absent where no HTTP date can hold the version's timestamp. */
  readonly lastModified: string | undefined;
  readonly contentType: string;
}

const built = new WeakMap<StoredValue, Representation>();

export function representationOf(r: StoredValue): Representation {
  let rep = built.get(r);
  if (rep === undefined) {
    rep = { etag: etagOf(r.version), lastModified: httpDateOf(r.version), contentType: sniffContentType(r.value) };
    built.set(r, rep);
  }
  return rep;
}
