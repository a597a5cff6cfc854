// Every curl command in README.md's sh/bash blocks, run as pasted: by a shell (so quoting is the
// shell's) and the real curl, against the demo as `npm start` runs it (the CKAN emulator, answering as
// CKAN 2.12, and the worker in `wrangler dev --test-scheduled`). Only the address changes: the
// README's http://127.0.0.1:8787 (and the deployed address of "Deploy to your portal") becomes this spec's worker. An example must exit 0 and end with an
// answer under 400, unless its comment says `answers <status>`, the status it shows.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { startWorker, type WorkerProcess } from "./harness.mts";

const README = new URL("../../README.md", import.meta.url);
const DEMO = "http://127.0.0.1:8787";
/** What "Deploy to your portal" calls the deployed worker: its examples run against the demo too. */
const DEPLOYED = "https://datastore-export.<your-subdomain>.workers.dev";

interface Example {
  /** 1-based line of README.md where the command starts */
  line: number;
  command: string;
  /** The status the example shows; undefined: any status under 400. */
  answers?: number;
}

/** The curl commands of the sh/bash blocks, lines joined where they end in a backslash. */
function curlExamples(markdown: string): Example[] {
  const examples: Example[] = [];
  let inShell = false;
  let fenced = false;
  let pending: { line: number; text: string } | undefined;
  markdown.split("\n").forEach((raw, index) => {
    const fence = /^\s*```(\w*)/.exec(raw);
    if (fence) {
      inShell = !fenced && ["sh", "bash", "shell", "console"].includes(fence[1] ?? "");
      fenced = !fenced;
      return;
    }
    if (!inShell) return;
    const text = pending ? `${pending.text} ${raw.trim()}` : raw.trim();
    const line = pending?.line ?? index + 1;
    if (text.endsWith("\\")) {
      pending = { line, text: text.slice(0, -1).trimEnd() };
      return;
    }
    pending = undefined;
    const command = text.replace(/^\$\s+/, "");
    if (!/^curl\s/.test(command)) return;
    const answers = /#.*\banswers (\d{3})\b/.exec(command)?.[1];
    examples.push({ line, command, ...(answers === undefined ? {} : { answers: Number(answers) }) });
  });
  return examples;
}

function onPath(name: string): string | undefined {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .map((dir) => join(dir, name))
    .find((path) => existsSync(path));
}

const skip = onPath("curl") === undefined && process.env.CI !== "true";
if (skip) process.stderr.write("test/http: no curl on PATH: README's curl examples are not run\n");

interface Run {
  code: number;
  statuses: number[];
  stderr: string;
  /** The end of what curl printed, for a failure's message. */
  tail: string;
}

/**
 * The command through bash, in `cwd`, curl told to print each answer's status on stderr. `-q` (first)
 * keeps a developer's ~/.curlrc out, so the run is what a fresh machine does.
 */
function run(command: string, cwd: string): Promise<Run> {
  const instrumented = command.replace(
    /^curl\s/,
    `curl -q --silent --show-error --write-out '%{stderr}\\nHTTP %{http_code}\\n' `,
  );
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["-o", "pipefail", "-c", instrumented],
      { cwd, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        const statuses = [...stderr.matchAll(/^HTTP (\d{3})$/gm)].map((m) => Number(m[1]));
        resolve({ code, statuses, stderr: stderr.replace(/^HTTP \d{3}$/gm, "").trim(), tail: stdout.slice(-1000) });
      },
    );
  });
}

describe.skipIf(skip)("README's curl examples, run as pasted against the demo", async () => {
  const examples = curlExamples(await readFile(README, "utf8"));
  let emulator: EmulatorServer;
  let worker: WorkerProcess;
  let cwd: string;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0, version: "2.12" });
    worker = await startWorker({
      vars: { CKAN_BASE_URL: `${emulator.url}/data/en`, CKAN_API_TOKEN: "demo-token" },
      flags: ["--test-scheduled"],
    });
    // `curl -O` saves into the working directory: a throw-away one.
    cwd = await mkdtemp(join(tmpdir(), "datastore-export-readme-"));
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([worker?.stop(), emulator?.close()]);
    if (cwd) await rm(cwd, { recursive: true, force: true });
  }, 30_000);

  it("finds the examples, among them the ones curl itself used to refuse (braces, brackets, spaces)", () => {
    const commands = examples.map((e) => e.command);
    expect(commands.length).toBeGreaterThanOrEqual(8);
    for (const needed of ["filters={", "filter.amount[gte]", "sort=amount desc, name"]) {
      expect(
        commands.filter((c) => c.includes(needed)),
        needed,
      ).not.toEqual([]);
    }
    expect(
      examples.filter((e) => !e.command.includes(DEMO) && !e.command.includes(DEPLOYED)),
      "examples against an address this spec cannot stand in for",
    ).toEqual([]);
  });

  // One at a time, in README order: the snapshot examples read what the one before wrote.
  it.each(examples.map((e) => [`README.md:${e.line}: ${e.command}`, e] as const))(
    "%s",
    async (_name, example) => {
      const result = await run(example.command.replaceAll(DEMO, worker.url).replaceAll(DEPLOYED, worker.url), cwd);
      const expected = example.answers;
      // A command that retries (a snapshot not written yet) gets a status per attempt: the last one counts.
      const last = result.statuses.at(-1);
      const why = `curl said: ${result.stderr}\nthe answer ended: ${result.tail}`;
      if (expected === undefined) {
        expect(result.code, why).toBe(0);
        expect(last !== undefined && last < 400, `HTTP ${last}; ${why}`).toBe(true);
      } else {
        expect(last, why).toBe(expected);
      }
    },
    300_000,
  );
});
