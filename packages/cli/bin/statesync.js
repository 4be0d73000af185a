#!/usr/bin/env node
// The `statesync` executable. A committed launcher, so that npm links it at install time even
// before `dist/` is built (on a fresh clone `npm ci` skipped a bin whose file did not exist yet,
// and `npx statesync` failed).
import "../dist/bin.js";
