import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { SourceMap } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Session } from "node:inspector";

/** The parts of a V8 `.cpuprofile` the analysis reads. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  }>;
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/**
 * Node's CPU profiler (the inspector's `Profiler` domain, what `node --cpu-prof` uses) around
 * one window: `start()` before it, `stop(file)` after it writes the `.cpuprofile`, which opens in
 * Chrome DevTools or VS Code. Sampling interval 100 µs.
 */
export class WindowProfiler {
  private readonly session = new Session();

  private post<T>(method: string, params?: object): Promise<T> {
    return new Promise((resolve, reject) =>
      this.session.post(method, params ?? {}, (err, result) =>
        err ? reject(err) : resolve(result as T),
      ),
    );
  }

  async start(): Promise<void> {
    this.session.connect();
    await this.post("Profiler.enable");
    await this.post("Profiler.setSamplingInterval", { interval: 100 });
    await this.post("Profiler.start");
  }

  async stop(file: string): Promise<CpuProfile> {
    const { profile } = await this.post<{ profile: CpuProfile }>("Profiler.stop");
    this.session.disconnect();
    await writeFile(file, JSON.stringify(profile));
    return profile;
  }
}

const maps = new Map<string, SourceMap | undefined>();

/**
 * The TypeScript source position of a position in a built file that has a `.js.map` beside it
 * (the packages are built with source maps), else the position as it is. Lines are 0-based in
 * and 1-based out.
 */
function sourcePosition(url: string, line: number, column: number): { file: string; line: number } {
  if (!url.startsWith("file://")) return { file: url, line: line + 1 };
  const file = fileURLToPath(url);
  if (!maps.has(file)) {
    try {
      maps.set(file, new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8"))));
    } catch {
      maps.set(file, undefined);
    }
  }
  const entry = maps.get(file)?.findEntry(line, column) as
    { originalSource?: string; originalLine?: number } | undefined;
  if (entry?.originalSource === undefined || entry.originalLine === undefined) {
    return { file, line: line + 1 };
  }
  const source = entry.originalSource.startsWith("file://")
    ? fileURLToPath(entry.originalSource)
    : resolve(dirname(file), entry.originalSource);
  return { file: source, line: entry.originalLine + 1 };
}

/** One function's self time in a profile. */
export interface SelfTime {
  /** `name (file:line)`, files relative to the repository. */
  fn: string;
  ms: number;
  /** Share of the busy (non-idle) time. */
  share: number;
}

/**
 * Self time per function (summed over every call site of the same function), highest first,
 * and the busy time: every sample but `(idle)`, GC and `(program)` included. Functions of the
 * built packages are named by their TypeScript source position (through the source maps).
 */
export function selfTimes(profile: CpuProfile): {
  busyMs: number;
  idleMs: number;
  top: SelfTime[];
} {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const perFn = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    // a delta is the time before sample i; attribute the time after it (the next delta)
    const dt = (deltas[i + 1] ?? 0) / 1000;
    const frame = byNode.get(samples[i]!);
    if (!frame) continue;
    if (frame.functionName === "(idle)") {
      idle += dt;
      continue;
    }
    busy += dt;
    const pos = sourcePosition(frame.url, frame.lineNumber, frame.columnNumber);
    const file = pos.file.replace(/^.*?\/(packages|bench|node_modules)\//, "$1/");
    const key = `${frame.functionName || "(anonymous)"}${file ? ` (${file}:${pos.line})` : ""}`;
    perFn.set(key, (perFn.get(key) ?? 0) + dt);
  }
  const top = [...perFn]
    .map(([fn, ms]) => ({ fn, ms, share: busy > 0 ? ms / busy : 0 }))
    .sort((a, b) => b.ms - a.ms);
  return { busyMs: busy, idleMs: idle, top };
}
