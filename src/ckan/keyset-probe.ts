import { CkanValidationError } from "./error-answers.ts";
import type { CkanSite } from "./site.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

/** CKAN before 2.12 rejects an unknown parameter with a 409: `include_next_page` is one there. */
function rejectsKeyset(error: unknown): boolean {
  return (
    error instanceof CkanValidationError && (error.fields.__extras ?? []).some((m) => m.includes("include_next_page"))
  );
}

export interface FirstPage {
  result: SearchResult;
  /** Whether later pages follow `next_page` (the site answered it) or go by offset. */
  keyset: boolean;
}

/**
 * The export's first page. Asked for keyset paging (`keysetBody`), a site not met yet is also asked
 * the plain way (`plainBody`) at once, so learning which it supports never delays the first byte;
 * what the site answered is kept in its facts for the isolate's later exports.
 */
export async function fetchFirstPage(
  site: CkanSite,
  keysetBody: SearchRequest | undefined,
  plainBody: SearchRequest,
  signal: AbortSignal,
): Promise<FirstPage> {
  const { client, facts } = site;
  if (keysetBody === undefined) return { result: await client.search(plainBody, signal), keyset: false };
  if (facts.keyset === true) return { result: await client.search(keysetBody, signal), keyset: true };
  // A site whose version /health has read is asked one way only.
  const byVersion = keysetByVersion(facts.version);
  if (byVersion === false) {
    facts.keyset = false;
    return { result: await client.search(plainBody, signal), keyset: false };
  }
  if (byVersion === true) return await keysetFirst(site, keysetBody, plainBody, signal);

  const giveUp = new AbortController();
  const asked = client.search(keysetBody, signal);
  const plain = client.search(plainBody, AbortSignal.any([signal, giveUp.signal]));
  plain.catch(() => {});
  try {
    const result = await asked;
    facts.keyset = true;
    giveUp.abort();
    return { result, keyset: true };
  } catch (error) {
    if (!rejectsKeyset(error)) {
      giveUp.abort();
      throw error;
    }
    facts.keyset = false;
    return { result: await plain, keyset: false };
  }
}

/** What CKAN's version (status_show's, read by /health) says of keyset paging, which came with 2.12; undefined when unknown. */
export function keysetByVersion(version: string | undefined): boolean | undefined {
  const parts = version === undefined ? null : /^(\d+)\.(\d+)/.exec(version);
  if (parts === null) return undefined;
  const [major, minor] = [Number(parts[1]), Number(parts[2])];
  return major > 2 || (major === 2 && minor >= 12);
}

/** Asked by keyset alone (the version says the site has it); should it refuse all the same, asked the plain way. */
async function keysetFirst(
  site: CkanSite,
  keysetBody: SearchRequest,
  plainBody: SearchRequest,
  signal: AbortSignal,
): Promise<FirstPage> {
  try {
    const result = await site.client.search(keysetBody, signal);
    site.facts.keyset = true;
    return { result, keyset: true };
  } catch (error) {
    if (!rejectsKeyset(error)) throw error;
    site.facts.keyset = false;
    return { result: await site.client.search(plainBody, signal), keyset: false };
  }
}
