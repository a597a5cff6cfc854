import { conditionalAnswer } from "../protocol/conditional.ts";
import { requireAdmin } from "../security/admin.ts";
import { requireSignedLink } from "../security/links.ts";
import { enforceRateLimit } from "../security/rate-limit.ts";
import { answerWithCachePolicy } from "./cache-policy.ts";
import type { Guard, RequestContext, Route } from "./route.ts";

/** What each declared guard checks (see Guard); `route` says which guards ran before this one. */
const GUARDS: Record<Guard, (context: RequestContext, route: Route) => Promise<void>> = {
  "signed link": ({ url, config }) => requireSignedLink(url, config),
  "operators when signing": async ({ request, config }) => {
    if (config.linkSigningKey !== undefined) await requireAdmin(request, config);
  },
  "admin token": ({ request, config }) => requireAdmin(request, config),
  // A signature keys the budget only where the signed-link guard, declared before this one, verified
  // it: a made-up `sig` on any other route is never a fresh budget.
  "rate limit": ({ request, env, config, url }, route) =>
    enforceRateLimit(
      request,
      env,
      config,
      route.guards.indexOf("signed link") >= 0 &&
        route.guards.indexOf("signed link") < route.guards.indexOf("rate limit")
        ? (url.searchParams.get("sig") ?? undefined)
        : undefined,
    ),
};

/**
 * One route's request, as its entry declares it: its guards in order, its validated input, its
 * handler inside its cache policy (routes/cache-policy.ts), then (for a conditional route) the
 * preconditions against the response's validators; an error answered the route's own way when it
 * has one. Handlers never call a guard, a cache or a precondition check themselves.
 */
export async function serveRoute<I>(route: Route<I>, context: RequestContext): Promise<Response> {
  try {
    for (const guard of route.guards) await GUARDS[guard](context, route as Route);
    const input = route.input === undefined ? (undefined as I) : route.input(context);
    const response = await answerWithCachePolicy(route, context, input);
    return route.conditional ? await answerPreconditions(context.request, response) : response;
  } catch (error) {
    if (route.answerError === undefined) throw error;
    return route.answerError(error, context);
  }
}

/**
 * A 304 or 412 instead of a whole response whose validators the request's preconditions name; a
 * response without validators (a streamed export) or not a 200 (a range) passes as it is.
 */
async function answerPreconditions(request: Request, response: Response): Promise<Response> {
  if (response.status !== 200 || !(response.headers.has("etag") || response.headers.has("last-modified")))
    return response;
  const answer = conditionalAnswer(request, response.headers);
  if (answer === undefined) return response;
  await response.body?.cancel();
  return answer;
}
