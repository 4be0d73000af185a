// Imports every entry point the packages export, so that `tsc` with `skipLibCheck: false`
// checks all of their declaration files against this app's zod, immer, React and Playwright.
import * as core from "@statesync/core";
import * as coreTesting from "@statesync/core/testing";
import * as node from "@statesync/node";
import * as browser from "@statesync/browser";
import * as react from "@statesync/browser/react";
import * as offline from "@statesync/browser/offline";
import * as playwright from "@statesync/playwright";
import * as chromium from "@statesync/playwright/chromium";

export const entryPoints = [core, coreTesting, node, browser, react, offline, playwright, chromium];
