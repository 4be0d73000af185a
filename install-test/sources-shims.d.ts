// For tsconfig.sources.json only: @statesync/node imports the optional peer @nats-io/jetstream on
// demand, and the scratch apps do not install it (their entry-point check shows that an app on
// the nats v2 line needs no @nats-io package). The sources check is about zod, so it stays `any`.
declare module "@nats-io/jetstream";
