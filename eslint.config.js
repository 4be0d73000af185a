import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "**/dist/**",
      "**/node_modules/**",
      "**/coverage/**",
      "bench/results/**",
      "bench/out/**",
      ".tmp/**",
      ".servers/**",
      ".pack/**",
      "**/tmp-*", // scratch files (git-ignored): a contributor's, never the project's
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
    },
  },
  {
    files: ["packages/core/src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "nats", message: "core is runtime-neutral: no runtime import of nats" },
            { name: "nats.ws", message: "core is runtime-neutral: no runtime import of nats.ws" },
          ],
          patterns: ["node:*"],
        },
      ],
    },
  },
  {
    // idb's openDB makes the upgrade transaction's `done`, which rejects unhandled when the upgrade
    // aborts (site data cleared while the database is created): open through openDatabase.
    files: ["packages/browser/src/**/*.ts", "packages/browser/src/**/*.tsx"],
    ignores: ["packages/browser/src/idb-transaction.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            {
              name: "idb",
              importNames: ["openDB"],
              message: "open with openDatabase (idb-transaction.ts): it handles the upgrade's done",
            },
          ],
        },
      ],
    },
  },
);
