// Authentication and the permission matrix on REST:
// each route needs a permission; the credentials must carry it (401 without
// usable credentials, 403 without the permission). Unknown routes and
// methods are left to the router (404/405), as bob does.
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { AuthError, Authenticator } from '../../auth/authenticator';
import { restPermission } from '../../auth/permissions';
import { HttpError } from '../status-ext';

export function authorize(auth: Authenticator, routers: Router[]) {
  return async function authorization(ctx: Context, next: Next): Promise<void> {
    const route = routers.map((r) => r.match(ctx.path, ctx.method)).find((m) => m.route)?.pathAndMethod.at(-1);
    if (!route) return next();
    // A refused request never reaches the router, which names the route for
    // the request metrics: name it here, or refusals count as "unmatched".
    (ctx as Context & { _matchedRoute?: string })._matchedRoute = String(route.path);
    const need = restPermission(ctx.method, String(route.path));
    if (need === 0) return next();
    let permissions: number;
    try {
      const id = await auth.authenticate(ctx.get('authorization') || undefined, ctx.req.socket.remoteAddress, 'rest');
      ctx.state.user = id.name;
      permissions = id.permissions;
    } catch (err) {
      if (err instanceof AuthError) throw new HttpError(err.status, err.message);
      throw err;
    }
    if ((permissions & need) !== need) throw new HttpError(403, 'Permission denied');
    return next();
  };
}
