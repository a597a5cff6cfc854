import type { Config } from "../config/config.ts";
import { CkanClient } from "./client.ts";
import type { UpstreamFetch } from "./types.ts";

/** What this isolate has learned of a CKAN site by using it. */
export interface SiteFacts {
  /** Whether it pages by keyset (`include_next_page`, CKAN 2.12+); undefined until an export has asked. */
  keyset: boolean | undefined;
  /** CKAN's version, once `status_show` told it (/health). */
  version: string | undefined;
  /** Whether `datastore_search_sql` answers: the aggregate routes learn it and read it here. */
  sqlSearch: boolean | undefined;
}

/**
 * A CKAN site as one piece of work uses it: a client for its requests (counted per export for the
 * request log) and what the isolate knows of the site, which every export of the isolate shares:
 * the first one learns whether the site pages by keyset, later ones do not ask again.
 */
export class CkanSite {
  readonly client: CkanClient;
  readonly facts: SiteFacts;

  constructor(client: CkanClient, facts: SiteFacts) {
    this.client = client;
    this.facts = facts;
  }

  /** Keyset paging is worth asking for: a site not met yet is asked, one that refused it is not. */
  get mayUseKeyset(): boolean {
    return this.facts.keyset !== false;
  }

  /**
   * Range filters came with keyset paging in CKAN 2.12: false once the site refused
   * `include_next_page` (an older CKAN), true once it answered it, undefined before.
   */
  get rangeFilters(): boolean | undefined {
    return this.facts.keyset;
  }
}

/**
 * The sites this isolate has met, by their datastore_search address (a site is its address: a spec's
 * harness gets its own, and the settings a request is read with may be a copy). Module scope is the
 * isolate's, so this lives exactly as long as what it remembers holds.
 */
const met = new Map<string, SiteFacts>();

/** What the isolate knows of the configured CKAN site (filled as exports and /health learn it). */
export function siteFacts(config: Pick<Config, "datastoreSearchUrl">): SiteFacts {
  let facts = met.get(config.datastoreSearchUrl);
  if (facts === undefined) {
    facts = { keyset: undefined, version: undefined, sqlSearch: undefined };
    met.set(config.datastoreSearchUrl, facts);
  }
  return facts;
}

/** The configured CKAN site, with a fresh client (its own request counts) and what the isolate knows of it. */
export const siteFor = (config: Config, upstreamFetch: UpstreamFetch): CkanSite =>
  new CkanSite(new CkanClient(config, upstreamFetch), siteFacts(config));
