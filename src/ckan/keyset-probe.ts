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
