import { createApp } from "./app.ts";
import type { Env } from "./env.ts";

const app = createApp({ upstreamFetch: (request) => fetch(request) });

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
