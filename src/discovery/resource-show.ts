import type { UpstreamFetch } from "../ckan/types.ts";

export interface ResourceText {
  title?: string;
  description?: string;
}

/** `resource_show` is a few hundred bytes; a portal slower than this is not worth waiting for here. */
const TIMEOUT_MS = 5000;
const MAX_DESCRIPTION = 500;

/**
 * A resource's name and description from CKAN's `resource_show`, asked anonymously: the API token is
 * only ever sent to datastore_search, so a private resource simply has none. Any failure (a site or
 * emulator without the action, a refusal, a time-out) gives nothing rather than an error.
 */
export async function resourceText(
  ckanBase: string,
  upstreamFetch: UpstreamFetch,
  resourceId: string,
): Promise<ResourceText> {
  const url = `${ckanBase}/api/action/resource_show?id=${encodeURIComponent(resourceId)}`;
  try {
    const response = await upstreamFetch(
      new Request(url, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(TIMEOUT_MS),
        redirect: "manual",
      }),
    );
    if (!response.ok) {
      await response.body?.cancel();
      return {};
    }
    const body = (await response.json()) as { success?: unknown; result?: { name?: unknown; description?: unknown } };
    if (body.success !== true) return {};
    const out: ResourceText = {};
    if (typeof body.result?.name === "string" && body.result.name.trim() !== "")
      out.title = body.result.name.trim().slice(0, 200);
    if (typeof body.result?.description === "string" && body.result.description.trim() !== "") {
      out.description = body.result.description.trim().slice(0, MAX_DESCRIPTION);
    }
    return out;
  } catch {
    return {};
  }
}
