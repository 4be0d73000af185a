import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
} from "@statesync/browser";
import {
  usePending,
  useRevision,
  useSynchronizedState,
  useSyncStatus,
  useWritable,
} from "@statesync/browser/react";
import { act, type ReactNode } from "react";
import { createRoot } from "react-dom/client";
import { afterEach, expect, it } from "vitest";
import { z } from "zod";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const model = defineModel({
  name: "two-counters",
  state: z.object({ a: z.number(), b: z.number() }),
  initial: { a: 0, b: 0 },
  commands: {
    bump: {
      args: z.object({ which: z.enum(["a", "b"]) }),
      apply(draft, { which }) {
        draft[which] += 1;
      },
    },
  },
});

const unmounts: Array<() => void> = [];
afterEach(() => unmounts.splice(0).forEach((u) => u()));

function mount(node: ReactNode): HTMLElement {
  const container = document.createElement("div");
  document.body.append(container);
  const root = createRoot(container);
  act(() => root.render(node));
  unmounts.push(() => {
    act(() => root.unmount());
    container.remove();
  });
  return container;
}

async function openSync() {
  return createSynchronizer({ log: new MemoryLog(), model, snapshots: false, ownsLog: true });
}

it("re-renders a selector's component only when its slice changes", async () => {
  const sync = await openSync();
  const renders = { a: 0, whole: 0 };
  function A() {
    const a = useSynchronizedState(sync, (s) => s.a);
    renders.a += 1;
    return <span data-testid="a">{a}</span>;
  }
  function Whole() {
    const state = useSynchronizedState(sync);
    renders.whole += 1;
    return <span data-testid="whole">{`${state.a}/${state.b}`}</span>;
  }
  const view = mount(
    <>
      <A />
      <Whole />
    </>,
  );
  expect(renders).toEqual({ a: 1, whole: 1 });
  await act(() => sync.update("bump", { which: "b" }));
  expect(renders).toEqual({ a: 1, whole: 2 });
  await act(() => sync.update("bump", { which: "a" }));
  expect(renders).toEqual({ a: 2, whole: 3 });
  expect(view.textContent).toBe("11/1");
  await sync.close();
});

it("keeps an equal slice by isEqual even when the selector builds a new object", async () => {
  const sync = await openSync();
  let renders = 0;
  function Pair() {
    const pair = useSynchronizedState(
      sync,
      (s) => ({ even: s.a % 2 === 0 }),
      (x, y) => x.even === y.even,
    );
    renders += 1;
    return <span>{String(pair.even)}</span>;
  }
  const view = mount(<Pair />);
  await act(() => sync.update("bump", { which: "b" }));
  expect(renders).toBe(1);
  await act(() => sync.update("bump", { which: "a" }));
  expect(renders).toBe(2);
  expect(view.textContent).toBe("false");
  await sync.close();
});

it("follows status and revision", async () => {
  const sync = await openSync();
  function Status() {
    return <span>{`${useSyncStatus(sync)}@${useRevision(sync)}`}</span>;
  }
  const view = mount(<Status />);
  const start = sync.revision;
  expect(view.textContent).toBe(`live@${start}`);
  await act(() => sync.update("bump", { which: "a" }));
  expect(view.textContent).toBe(`live@${start + 1}`);
  await act(() => sync.close());
  expect(view.textContent).toBe(`closed@${start + 1}`);
});

it("follows whether updates reach the log, and why not", async () => {
  const log = new MemoryLog();
  const sync = await createSynchronizer({ log, model, snapshots: false, ownsLog: true });
  let renders = 0;
  function Banner() {
    renders += 1;
    const { writable, writeError } = useWritable(sync);
    return <span>{writable ? "writable" : `read-only: ${writeError?.code}`}</span>;
  }
  const view = mount(<Banner />);
  expect(view.textContent).toBe("writable");
  log.setConfigProblem("the stream was edited to deny writes");
  await act(async () => {
    await sync.update("bump", { which: "a" }).catch(() => undefined);
  });
  expect(view.textContent).toBe("read-only: STREAM_CONFIG");
  const shown = renders;
  await act(async () => {
    await sync.update("bump", { which: "b" }).catch(() => undefined);
  });
  expect(renders).toBe(shown); // the same failure again: no new render
  log.setConfigProblem(undefined);
  await act(async () => {
    await sync.update("bump", { which: "a" });
  });
  expect(view.textContent).toBe("writable");
  await act(() => sync.close());
  expect(view.textContent).toMatch(/^read-only: /);
});

it("shows the optimistic view by default, the confirmed state on request, and what is pending", async () => {
  const log = new MemoryLog();
  const sync = await createSynchronizer({
    log,
    model,
    snapshots: false,
    ownsLog: true,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner: "test" }),
  });
  function View() {
    const shown = useSynchronizedState(sync, (s) => s.a);
    const confirmed = useSynchronizedState(sync, (s) => s.a, undefined, { view: "confirmed" });
    const alsoConfirmed = useSynchronizedState(sync, (s) => s.a, { view: "confirmed" });
    const pending = usePending(sync);
    expect(alsoConfirmed).toBe(confirmed);
    return <span data-testid="v">{`${shown}/${confirmed}/${pending.length}`}</span>;
  }
  const view = mount(<View />);
  const text = () => view.querySelector('[data-testid="v"]')!.textContent;
  expect(text()).toBe("0/0/0");
  log.setOffline(true);
  const committed = sync.update("bump", { which: "a" });
  await act(async () => {
    await committed.queued;
  });
  await expect.poll(text).toBe("1/0/1"); // shown at once, not confirmed, pending
  log.setOffline(false);
  await act(async () => {
    await committed;
  });
  await expect.poll(text).toBe("1/1/0");
  await sync.close();
});
