import type { CkanClient } from "./client.ts";
import { CkanValidationError } from "./error-answers.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

/**
 * What each site (in this isolate) answered to `include_next_page`: CKAN before 2.12 rejects an
 * unknown parameter with a 409, so the first export learns it and later ones do not ask again.
 */
const keysetSupport = new Map<string, boolean>();

function rejectsKeyset(error: unknown): boolean {
  return error instanceof CkanValidationError && (error.fields.__extras ?? []).some((m) => m.includes("include_next_page"));
}

/** Whether keyset paging is worth asking for on this site: unknown sites are asked, refusing ones are not. */
export const mayUseKeyset = (siteKey: string): boolean => keysetSupport.get(siteKey) !== false;

/** The site refused `include_next_page`, a CKAN 2.12 parameter: it runs an older CKAN. */
export const isBefore212 = (siteKey: string): boolean => keysetSupport.get(siteKey) === false;

export interface FirstPage {
  result: SearchResult;
  /** Whether later pages follow `next_page` (the site answered it) or go by offset. */
  keyset: boolean;
}

/**
 * The export's first page. Asked for keyset paging (`keysetBody`), a site not met yet is also asked
 * the plain way (`plainBody`) at once, so learning which it supports never delays the first byte.
 */
export async function fetchFirstPage(
  client: CkanClient,
  siteKey: string,
  keysetBody: SearchRequest | undefined,
  plainBody: SearchRequest,
  signal: AbortSignal,
): Promise<FirstPage> {
  if (keysetBody === undefined) return { result: await client.search(plainBody, signal), keyset: false };
  if (keysetSupport.get(siteKey) === true) return { result: await client.search(keysetBody, signal), keyset: true };

  const giveUp = new AbortController();
  const asked = client.search(keysetBody, signal);
  const plain = client.search(plainBody, AbortSignal.any([signal, giveUp.signal]));
  plain.catch(() => {});
  try {
    const result = await asked;
    keysetSupport.set(siteKey, true);
    giveUp.abort();
    return { result, keyset: true };
  } catch (error) {
    if (!rejectsKeyset(error)) {
      giveUp.abort();
      throw error;
    }
    keysetSupport.set(siteKey, false);
    return { result: await plain, keyset: false };
  }
}
