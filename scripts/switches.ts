// Command-line switches of the scripts that start `wrangler dev` (npm start, npm run dev): ours are
// taken out, everything else goes to wrangler as it came (wrangler refuses a second --port).

/** Takes our own switches (`--name value` or `--name=value`) out of the command line. */
export function takeSwitches(
  argv: readonly string[],
  names: readonly string[],
  fail: (message: string) => never,
): { values: Map<string, string>; rest: string[] } {
  const values = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const name = names.find((n) => arg === `--${n}` || arg.startsWith(`--${n}=`));
    if (name === undefined) {
      rest.push(arg);
      continue;
    }
    const value = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : argv[++i];
    if (value === undefined || value === "") fail(`--${name} needs a value`);
    values.set(name, value);
  }
  return { values, rest };
}

export function portNumber(value: string, what: string, fail: (message: string) => never): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 65535) fail(`${what} must be a port number from 1 to 65535, not "${value}"`);
  return n;
}

/**
 * Fails unless 127.0.0.1:port is free: on a taken port `wrangler dev` quietly takes another, and the
 * address a script prints (and README's curl lines) would reach whatever holds it.
 */
export async function ensurePortFree(port: number, what: string, fail: (message: string) => never): Promise<void> {
  const { createServer } = await import("node:net");
  const server = createServer();
  const taken = await new Promise<string | undefined>((resolve) => {
    server.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen(port, "127.0.0.1", () => resolve(undefined));
  });
  if (taken === undefined) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return;
  }
  fail(
    `${what}: 127.0.0.1:${port} is taken (${taken}); npm start's demo uses 8787 and its emulator 8788. Choose another with --port.`,
  );
}
