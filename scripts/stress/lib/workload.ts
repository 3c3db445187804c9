/**
 * The mixed `fake` tasks of the grounds (docs/runtimes.md#fake): quick and slow ends, event streams,
 * providers that leave a group or a stubborn child behind, waits for a human, crashes and failures, on
 * review and workspace-write profiles. Each comes with what a success must answer.
 */
import type { seeded } from "./ground.ts";

export interface TaskSpec {
  kind: string;
  profile: "review" | "workspace-write";
  prompt: string;
  expectFinal: string | null;
  events: number | null;
}

type Rng = ReturnType<typeof seeded>;

/** [weight, builder]; `i` makes every prompt (and so every idempotency fingerprint) unique. */
const KINDS: [number, (r: Rng, i: number) => TaskSpec][] = [
  [3, (_r, i) => ({ kind: "complete", profile: "review", prompt: `complete:c${i}`, expectFinal: `c${i}`, events: null })],
  [
    4,
    (r, i) => ({
      kind: "sleep",
      profile: r.pick(["review", "workspace-write"] as const),
      prompt: `sleep:${r.int(50, 3000)}:s${i}`,
      expectFinal: `s${i}`,
      events: null,
    }),
  ],
  [
    3,
    (r) => {
      const n = r.int(20, 400);
      return { kind: "events", profile: "review", prompt: `events:${n}`, expectFinal: `events=${n}`, events: n };
    },
  ],
  [2, (r) => ({ kind: "spawn", profile: r.pick(["review", "workspace-write"] as const), prompt: "spawn:120", expectFinal: null, events: null })],
  [1, () => ({ kind: "wait", profile: "review", prompt: "wait:", expectFinal: null, events: null })],
  [1, (_r, i) => ({ kind: "approval", profile: "review", prompt: `approval:cmd${i}`, expectFinal: null, events: null })],
  [2, (_r, i) => ({ kind: "write", profile: "workspace-write", prompt: `write:out/f${i}.txt:${i}`, expectFinal: `wrote=out/f${i}.txt`, events: null })],
  [1, () => ({ kind: "crash", profile: "review", prompt: "crash:", expectFinal: null, events: null })],
  [1, (_r, i) => ({ kind: "fail", profile: "review", prompt: `fail:f${i}`, expectFinal: null, events: null })],
  [1, (_r, i) => ({ kind: "linger", profile: "workspace-write", prompt: `linger:120:l${i}`, expectFinal: `l${i}`, events: null })],
  // a review run has no guard: a kill inside its finally path leaves a child that only startup's mark scan finds
  [1, (_r, i) => ({ kind: "review-linger", profile: "review", prompt: `linger:120:rl${i}`, expectFinal: `rl${i}`, events: null })],
];

export function randomTask(r: Rng, i: number): TaskSpec {
  let at = r.next() * KINDS.reduce((n, [w]) => n + w, 0);
  for (const [w, build] of KINDS) {
    if (at < w) return build(r, i);
    at -= w;
  }
  return KINDS[0]![1](r, i);
}
