import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The app is served as a static build (`vite build`, then `vite preview` or any static server).
// Top-level await in main.tsx needs an ES2022 target. One chunk of about 600 kB (180 kB gzipped:
// React, zod, immer, nats.ws and statesync) is fine for a demo.
export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist/app", target: "es2022", chunkSizeWarningLimit: 800 },
  preview: { host: "127.0.0.1" },
});
