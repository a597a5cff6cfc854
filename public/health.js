// The health banner: GET /health says whether an export can work right now (CKAN reachable, the
// token accepted, the settings usable). A page that hands out links while CKAN is down would only
// produce links that fail, so the page says so first, with the worker's own list of problems.
import { parseExact } from "./exact-json.js";

/**
 * What the banner should say for one answer of /health: undefined when there is nothing to show
 * (healthy; or 401/403, where /health is gated like discovery and says nothing to strangers),
 * otherwise { title, problems }.
 */
export function healthVerdict(status, body) {
  if (status === 401 || status === 403) return undefined;
  // Other 4xx (a worker without the route, a rate limit) say nothing about CKAN or the settings.
  if (status < 500 && body?.ok !== false) return undefined;
  const problems = Array.isArray(body?.problems) ? body.problems.filter((p) => typeof p === "string" && p !== "") : [];
  const ckan = body?.ckan;
  const where =
    typeof ckan?.base === "string"
      ? ` (CKAN at ${ckan.base}${ckan.reachable && ckan.version ? `, version ${ckan.version}` : ""})`
      : "";
  return {
    title: `This worker reports problems${where}: exports may fail until they are fixed.`,
    problems: problems.length > 0 ? problems : [`GET /health answered HTTP ${status} without naming a problem.`],
  };
}

/** Fetches /health and fills the banner `box` (hidden when all is well). */
export async function showHealth(box, headers) {
  let verdict;
  try {
    const response = await fetch("/health", { headers: { accept: "application/json", ...headers }, cache: "no-store" });
    const body = await response
      .text()
      .then((text) => parseExact(text))
      .catch(() => undefined);
    verdict = healthVerdict(response.status, body);
  } catch (error) {
    verdict = {
      title: "The worker did not answer GET /health: it may be down or unreachable from this browser.",
      problems: [String(error?.message ?? error)],
    };
  }
  box.hidden = verdict === undefined;
  if (verdict === undefined) return box.replaceChildren();
  const title = document.createElement("strong");
  title.textContent = verdict.title;
  const list = document.createElement("ul");
  list.append(
    ...verdict.problems.map((problem) => Object.assign(document.createElement("li"), { textContent: problem })),
  );
  box.replaceChildren(title, list);
}
