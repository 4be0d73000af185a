/**
 * What the benchmarks read about processes from the OS: the file-descriptor limit a run of many
 * connections needs, and the CPU time and resident memory of a process (the nats-server) from
 * `/proc` (Linux).
 */
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";

/** Clock ticks per second of `/proc/<pid>/stat` (`getconf CLK_TCK`, 100 on Linux). */
export const TICKS_PER_S = 100;

/** The shell's `ulimit -n` (`hard`: `-Hn`) of this process; NaN when it cannot be read. */
export function fileLimit(hard = false): number {
  try {
    const out = execFileSync("sh", ["-c", hard ? "ulimit -Hn" : "ulimit -n"], {
      encoding: "utf8",
    }).trim();
    return out === "unlimited" ? Infinity : Number(out);
  } catch {
    return NaN;
  }
}

/** utime + stime of `pid` in clock ticks, and its resident memory in MiB. */
export async function processUsage(pid: number): Promise<{ ticks: number; rssMiB: number }> {
  const stat = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return { ticks: Number(stat[11]) + Number(stat[12]), rssMiB: rssKiB / 1024 };
}
