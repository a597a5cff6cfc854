import { createApp } from "./app.ts";
import type { Env } from "./config/env.ts";

const app = createApp({ upstreamFetch: (request) => fetch(request) });

export default {
  fetch: app.fetch,
  scheduled: async (controller, env, ctx) => {
    ctx.waitUntil(app.scheduled(controller.cron, controller.scheduledTime, env));
  },
} satisfies ExportedHandler<Env>;
