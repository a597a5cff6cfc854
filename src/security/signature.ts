// Signed links, shared by the worker and `npm run sign` (Node runs this file as is: plain WebCrypto,
// no Workers-only APIs).

import { canonicalLink } from "../protocol/canonical-link.ts";

const utf8 = new TextEncoder();

function hmacKey(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", utf8.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

function toBase64Url(bytes: ArrayBuffer): string {
  let binary = "";
  for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]{43}$/.test(text)) return undefined;
  const binary = atob(`${text.replace(/-/g, "+").replace(/_/g, "/")}=`);
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  // The last character carries two bits past the 32 bytes, which atob ignores: only the spelling
  // signLink writes (those bits zero) is the signature, else four `sig`s would verify for one link.
  return toBase64Url(bytes.buffer) === text ? bytes : undefined;
}

export async function signLink(secret: string, pathname: string, params: URLSearchParams): Promise<string> {
  const key = await hmacKey(secret, "sign");
  return toBase64Url(await crypto.subtle.sign("HMAC", key, utf8.encode(canonicalLink(pathname, params))));
}

/** `crypto.subtle.verify` compares in constant time; a malformed `sig` simply does not verify. */
export async function verifyLink(
  secret: string,
  pathname: string,
  params: URLSearchParams,
  sig: string,
): Promise<boolean> {
  const signature = fromBase64Url(sig);
  if (signature === undefined) return false;
  const key = await hmacKey(secret, "verify");
  return crypto.subtle.verify("HMAC", key, signature, utf8.encode(canonicalLink(pathname, params)));
}

/** `path?query` with `exp` (when given) and `sig` appended: the link to hand out. */
export async function signedPath(secret: string, link: string, expires?: number): Promise<string> {
  const url = new URL(link, "http://link.invalid");
  url.searchParams.delete("sig");
  if (expires !== undefined) url.searchParams.set("exp", String(expires));
  url.searchParams.set("sig", await signLink(secret, url.pathname, url.searchParams));
  return `${url.pathname}?${url.searchParams.toString()}`;
}
