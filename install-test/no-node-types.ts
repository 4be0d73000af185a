// The packages' declarations under a tsconfig that lists no `types` (TypeScript 6 and later load
// no `@types` package unless told): a package whose declarations name Node types must load them
// itself (`/// <reference types="node" preserve="true" />`), or an app without Node globals of
// its own fails inside the package (a new user's `npx tsc` with the newest TypeScript did).
// Playwright's own declarations need Node's types, so its package is left out.
import * as core from "@statesync/core";
import * as node from "@statesync/node";
import * as browser from "@statesync/browser";
import * as react from "@statesync/browser/react";
import * as offline from "@statesync/browser/offline";

export const withoutNodeTypes = [core, node, browser, react, offline];
