/**
 * The task service (docs/task-model.md): the state machine, submission in the documented order, human
 * requests, steering, cancellation, deadlines, and the write-run order around every run. It runs on
 * the Bridge's main thread; providers run in the provider worker, spool I/O in the spool worker,
 * periodic sweeps in the maintenance worker. Every state change is a compare-and-swap in the store,
 * so whichever side loses a race re-reads instead of overwriting.
 *
 * This class is the service's face to the RPC handlers and the Bridge's startup; each method takes
 * its RPC method's params as the protocol schema types them (`Params<M>`, defaults applied). Each
 * part lives in its own file over one shared `ServiceContext`: queries.ts, submit.ts,
 * run-lifecycle.ts, outcome.ts, interactions.ts, expiry.ts, steering.ts, recovery.ts, shutdown.ts.
 */

import type { Remote } from "comlink";
import type { Params } from "../../../shared/bridge-protocol/methods.ts";
import { guardedSlots } from "../../../shared/leases/guard-files.ts";
import type { SweepFinding } from "../../../shared/leases/reconcile-verdict.ts";
import type { TimesSnapshot } from "../../../workers/maintenance-worker.ts";
import type { ProviderWorker } from "../../../workers/provider-worker.ts";
import { ServiceContext, type ServiceDeps } from "./context.ts";
import { checkTimes } from "./expiry.ts";
import { answerQuestion, respondApproval } from "./interactions.ts";
import { readEvents, readResult, readTask, readTaskList, runtimeList } from "./queries.ts";
import { providersGone, recoveryClear, recoveryList } from "./recovery.ts";
import { SHUTDOWN_BOUND_MS, shutdownRuns } from "./shutdown.ts";
import { cancelTask, sendMessage } from "./steering.ts";
import { submitTask } from "./submit.ts";

export type { ServiceDeps } from "./context.ts";
export { SHUTDOWN_BOUND_MS } from "./shutdown.ts";

export class TaskService {
  private readonly ctx: ServiceContext;

  constructor(deps: ServiceDeps) {
    this.ctx = new ServiceContext(deps);
  }

  get isClosing(): boolean {
    return this.ctx.closing;
  }

  /**
   * A provider worker died and its replacement is starting: runs dispatched meanwhile wait for it
   * instead of going to the dead one (which would fail them AGENT_PROVIDER_DISCONNECTED at once).
   */
  replacingProvider(ready: Promise<Remote<ProviderWorker>>): void {
    this.ctx.providerReady = ready.then((provider) => {
      this.ctx.deps.provider = provider;
    });
  }

  /** A response line of `bytes` was written: enough of them make the Bridge give memory back once idle. */
  noteAnswered(bytes: number): void {
    this.ctx.noteAnswered(bytes);
  }

  /** Task ids with a live runner here (the maintenance sweep leaves those to their runner). */
  liveTaskIds(): string[] {
    return this.ctx.runs.taskIds();
  }

  runtimeList() {
    return runtimeList(this.ctx);
  }
  get(taskId: string) {
    return readTask(this.ctx, taskId);
  }
  list(p: Params<"task.list">) {
    return readTaskList(this.ctx, p);
  }
  events(p: Params<"task.events">, signal?: AbortSignal) {
    return readEvents(this.ctx, p, signal);
  }
  readResult(p: Params<"task.result.read">) {
    return readResult(this.ctx, p);
  }
  // submissions and decisions are refused while the database file is not the one open (requireState)
  submit(p: Params<"task.submit">) {
    this.ctx.requireState();
    return submitTask(this.ctx, p);
  }
  respondApproval(p: Params<"task.approval.respond">) {
    this.ctx.requireState();
    return respondApproval(this.ctx, p);
  }
  answerQuestion(p: Params<"task.question.answer">) {
    this.ctx.requireState();
    return answerQuestion(this.ctx, p);
  }
  sendMessage(p: Params<"task.message.send">) {
    this.ctx.requireState();
    return sendMessage(this.ctx, p);
  }
  cancel(p: Params<"task.cancel">) {
    return cancelTask(this.ctx, p.task_id, p.actor);
  }
  recoveryList() {
    return recoveryList(this.ctx);
  }
  /** `metrics.read`: the counters since start, what the database holds, and the guards. */
  metrics() {
    return { ...this.ctx.deps.metrics.snapshot(), ...this.ctx.store.counts(), guards: guardedSlots(this.ctx.lockDir).length };
  }
  recoveryClear(p: Params<"recovery.clear">) {
    return recoveryClear(this.ctx, p);
  }

  /** The maintenance worker's findings (docs/task-model.md#reconciliation, #deadlines-and-interaction-expiry). */
  /** The maintenance pass found the database's path naming another file, or none. */
  stateLost(): void {
    this.ctx.noteStateLost("maintenance");
  }
  providersGone(findings: SweepFinding[]): void {
    providersGone(this.ctx, findings);
  }
  checkTimes(times: TimesSnapshot): void {
    checkTimes(this.ctx, times);
  }

  shutdown(boundMs = SHUTDOWN_BOUND_MS): Promise<void> {
    return shutdownRuns(this.ctx, boundMs);
  }
}
