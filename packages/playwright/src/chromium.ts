/**
 * Flags for a system Chromium (Debian's `chromium` package) run headless on a machine without a
 * display or outside network: no sandbox (running as root), no GPU, and none of the background
 * connections to Google's services that a closed network refuses.
 */
export const SYSTEM_CHROMIUM_ARGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Playwright `launchOptions` that drive an installed Chromium instead of a downloaded one:
 * `executablePath` is `executablePath`, else `$CHROMIUM_PATH`, else `/usr/bin/chromium`; `args`
 * are {@link SYSTEM_CHROMIUM_ARGS}. Use in `use.launchOptions` of a Playwright config, or in the
 * `launchOptions` of `@vitest/browser-playwright`. Never downloads anything.
 */
export function systemChromiumLaunchOptions(executablePath?: string): {
  executablePath: string;
  args: string[];
} {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
    ?.env;
  return {
    executablePath: executablePath ?? env?.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [...SYSTEM_CHROMIUM_ARGS],
  };
}
