import type { Config } from "../config/config.ts";
import { HttpError } from "../errors.ts";
import { verifyLink } from "./signature.ts";

const refuse = (message: string): HttpError => new HttpError(403, message, { parameter: "sig" });

/**
 * With LINK_SIGNING_KEY set, a link is honoured only when its `sig` matches the path and every
 * parameter, and its `exp` (if any) has not passed. The signature is checked before `exp` is
 * believed: an unsigned `exp` says nothing.
 */
export async function requireSignedLink(
  url: URL,
  config: Pick<Config, "linkSigningKey">,
  now = Date.now(),
): Promise<void> {
  const key = config.linkSigningKey;
  if (key === undefined) return;
  const sigs = url.searchParams.getAll("sig");
  if (sigs.length === 0) {
    throw refuse(
      "This link is not signed: this worker only serves signed links (a sig parameter). Ask the publisher for a signed link.",
    );
  }
  if (sigs.length > 1 || !(await verifyLink(key, url.pathname, url.searchParams, sigs[0] as string))) {
    throw refuse(
      "This link's signature does not match: the link was changed after it was signed (a parameter added, removed or edited), or it was signed with another key.",
    );
  }
  const exps = url.searchParams.getAll("exp");
  if (exps.length === 0) return;
  const exp = /^\d{1,12}$/.test(exps[0] ?? "") ? Number(exps[0]) : Number.NaN;
  if (exps.length > 1 || Number.isNaN(exp)) throw refuse("This link's exp is not a Unix time in seconds.");
  if (exp * 1000 <= now) {
    throw refuse(`This link expired at ${new Date(exp * 1000).toISOString()}. Ask the publisher for a new one.`);
  }
}
