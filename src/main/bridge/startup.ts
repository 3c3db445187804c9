/**
 * `serverfs bridge` (docs/task-model.md#reconciliation order): instance lock → database and migration → lock and
 * spool directories → GC → reconciliation → workers → socket → serve. SIGTERM/SIGINT/SIGHUP run the
 * bounded shutdown of docs/task-model.md#shutdown; a second signal forces exit 1, leaving unverified guards for the next
 * start to reconcile.
 */
import * as Comlink from "comlink";
import type { AuditLog } from "../../shared/audit.ts";
import { openAuditLog } from "../../shared/audit-file.ts";
import { type StartedWorker, startWorker } from "../../shared/comlink-worker.ts";
import { type Config, ConfigError, groupSharing, loadConfig } from "../../shared/config/load.ts";
import { errorTrace } from "../../shared/error-trace.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { PRIVATE_DIR } from "../../shared/fs/modes.ts";
import { removeLeftoverGuardTemps } from "../../shared/leases/guard-files.ts";
import { ensurePrivateDir, prepareLockDir } from "../../shared/leases/lock-files.ts";
import type { SweepFinding } from "../../shared/leases/reconcile-verdict.ts";
import { collectGarbage } from "../../shared/retention.ts";
import { isCompiled, selfCommand, workerUrl } from "../../shared/self-command.ts";
import { ensureResultsDir, removeLeftoverTemps } from "../../shared/spool.ts";
import { Store } from "../../shared/store/index.ts";
import { VERSION } from "../../shared/version.ts";
import { Workspaces } from "../../shared/workspace.ts";
import type { MaintenanceApi, PassFailure, PassReport, TimesSnapshot } from "../../workers/maintenance-worker.ts";
import type { ProviderWorker } from "../../workers/provider-worker.ts";
import { createAdapters, type RuntimeOptions } from "../../workers/runtimes.ts";
import { installFatalHandlers } from "../fatal-errors.ts";
import { acquireInstanceLock, acquireLockDirLock, type InstanceLock } from "./instance-lock.ts";
import { BridgeMetrics } from "./metrics.ts";
import { reconcileAtStartup } from "./reconciliation.ts";
import { startRpcServer } from "./rpc/server.ts";
import { bridgeHandlers } from "./rpc-handlers.ts";
import { RuntimeProbes } from "./service/runtime-probes.ts";
import { singleFlight } from "./service/single-flight.ts";
import { SHUTDOWN_BOUND_MS, TaskService } from "./service/task-service.ts";
import { startSpoolWorker } from "./spool-client.ts";

export interface RunningBridge {
  service: TaskService;
  /** Runs the docs/task-model.md#shutdown; resolves when everything is released. */
  stop(): Promise<void>;
  /** Crash tests: ends the provider worker as if it had died. */
  terminateProviderWorker(): void;
}

/** Beyond the providers' stop bound: closing the socket, the workers and the store. */
const FATAL_MARGIN_MS = 5_000;

const lost = (what: string) => () => new ServerFsError("BRIDGE_PROTOCOL_ERROR", `the ${what} worker stopped`);

const defaultRuntimeOptions = (): RuntimeOptions => (isCompiled() ? { fakeCommand: selfCommand("__fake-provider") } : {});

export async function startBridge(config: Config, options: RuntimeOptions = defaultRuntimeOptions()): Promise<RunningBridge> {
  const audit = openAuditLog(config.server.log_level, config.audit);
  // before reconciliation, so the recoveries it audits are counted
  const metrics = new BridgeMetrics(audit);
  const { stateDir, lockDir } = config.bridge;
  const sharingGid = groupSharing(config);

  // the operator's own directory, named for the operator: this error goes to the Bridge's stderr only
  ensurePrivateDir(stateDir, PRIVATE_DIR, null, (phrase) => new ServerFsError("STATE_DIR_UNSAFE", `bridge.state_dir ${stateDir}: ${phrase}`));
  const instance: InstanceLock = acquireInstanceLock(stateDir);
  const workers: StartedWorker<object>[] = [];
  let store: Store | null = null;
  let lockDirLock: InstanceLock | null = null;
  try {
    store = Store.open(stateDir, {
      migrate: true,
      onMigrated: (from) => {
        if (from !== "current") audit.info("schema_migrated", { from, to: "v0.7" });
      },
      // docs/decisions.md: the Bridge starts on a new database, and says loudly that the old one is gone
      onMissing: (evidence) => audit.error("state_database_missing", { evidence: evidence.join(","), action: "started with a new, empty database" }),
      log: audit,
    });
    prepareLockDir(lockDir, sharingGid);
    // before any guard is read: another live Bridge's guards would read as orphans here
    lockDirLock = acquireLockDirLock(lockDir, stateDir);
    removeLeftoverGuardTemps(lockDir, instance.acquiredAtMs);
    ensureResultsDir(stateDir);
    removeLeftoverTemps(stateDir);
    const retentionHours = config.bridge.lifecycle.retention_hours;
    collectGarbage({ store, stateDir, lockDir, retentionHours });
    await reconcileAtStartup({ store, lockDir, audit, terminateOrphans: config.bridge.recovery.terminate_orphans });

    const startProvider = async () => {
      const w = startWorker<ProviderWorker>(workerUrl("provider-worker"), lost("provider"));
      workers.push(w);
      await w.remote.init(stateDir, config.server.log_level, config.audit);
      await w.remote.configure({ bridge: config.file.bridge, runtimes: config.file.runtimes }, options);
      return w;
    };
    let provider = await startProvider();
    const spool = startSpoolWorker();
    const maintenance = startWorker<MaintenanceApi>(workerUrl("maintenance-worker"), lost("maintenance"));
    workers.push(spool, maintenance);
    await maintenance.remote.init({ stateDir, lockDir, retentionHours, intervalSeconds: config.bridge.lifecycle.maintenance_interval_seconds });

    const probes = new RuntimeProbes(createAdapters(config.file, options));
    const service = new TaskService({
      config,
      store,
      workspaces: new Workspaces(config),
      audit,
      metrics,
      probes,
      provider: provider.remote,
      spool: spool.remote,
      gc: singleFlight(async () => {
        await maintenance.remote.gc();
      }),
      releaseWorkerMemory: () => {
        for (const w of [provider, spool, maintenance]) void w.remote.releaseMemory().catch(() => undefined);
      },
      sharingGid,
    });
    await maintenance.remote.start(
      Comlink.proxy({
        timesToCheck: (times: TimesSnapshot) => service.checkTimes(times),
        liveTaskIds: () => service.liveTaskIds(),
        providersGone: (findings: SweepFinding[]) => service.providersGone(findings),
        stateLost: () => service.stateLost(),
        // an idle Bridge passes every interval: a pass that changed nothing is detail (debug), one that did something is news
        passed: (report: PassReport) =>
          audit.emit(report.gc_deleted + report.gc_skipped + report.findings === 0 ? "DEBUG" : "INFO", "maintenance_pass", { ...report }),
        passFailed: (failure: PassFailure) => audit.warn("maintenance_pass_failed", { ...failure }),
      }),
    );

    const rpc = await startRpcServer({
      socketPath: config.bridge.socketPath,
      peer: { uid: config.bridge.allowed_peer_uid, gid: config.bridge.allowed_peer_gid },
      sharingGid,
      handlers: bridgeHandlers(service),
      isClosing: () => service.isClosing,
      onWrote: (bytes) => service.noteAnswered(bytes),
      // the peer gets a generic BRIDGE_PROTOCOL_ERROR; the debug log what failed (never its message)
      onUnexpected: (method, e) => audit.debug("rpc_unexpected_error", { method, ...errorTrace(e) }),
      // docs/reliability.md#the-socket-path-stays-reachable: no path here, the startup line names it
      onRebound: (reason) => audit.warn("socket_rebound", { reason }),
      onRebindFailed: (reason, code) => audit.error("socket_rebind_failed", { reason, error_code: code }),
      // protocol detail only at debug: no per-request cost otherwise
      onAnswered:
        config.server.log_level === "debug"
          ? (method, r, ms) =>
              audit.debug("rpc_answered", {
                method,
                request_id: r.request_id,
                ok: r.ok,
                error_code: r.ok ? undefined : r.error?.code,
                ms: Math.round(ms * 10) / 10,
              })
          : undefined,
    });
    // the operator's own files and the pid, in this one line only (docs/deployment.md "Logs")
    audit.info("bridge_started", {
      version: VERSION,
      pid: process.pid,
      config_file: config.source,
      socket: config.bridge.socketPath,
      state_dir: stateDir,
      workdirs: config.workdirs.length,
    });
    warnUnavailableRuntimes(probes, audit);

    // docs/task-model.md#threads: a provider worker that dies is replaced; the tasks it ran end AGENT_PROVIDER_DISCONNECTED
    // through their own finally paths (each pending `run` call rejects when the worker is lost).
    let stopping: Promise<void> | null = null;
    const supervise = (w: StartedWorker<ProviderWorker>) => {
      void w.exited.then(async () => {
        if (stopping) return;
        audit.warn("provider_worker_lost", { live_tasks: service.liveTaskIds().length });
        const next = startProvider();
        service.replacingProvider(next.then((w) => w.remote));
        provider = await next;
        supervise(provider);
      });
    };
    supervise(provider);

    const openStore = store;
    const heldLockDir = lockDirLock;
    const stop = () => {
      stopping ??= (async () => {
        const began = performance.now();
        audit.info("shutdown_started", { live_tasks: service.liveTaskIds().length });
        // docs/task-model.md#shutdown step 1 first: nothing new is accepted while providers are being stopped
        await rpc.close();
        await service.shutdown();
        await maintenance.remote.stop().catch(() => undefined);
        await provider.remote.shutdown().catch(() => undefined);
        for (const w of workers) w.terminate();
        openStore.close();
        heldLockDir.release();
        instance.release();
        audit.info("shutdown_finished", { duration_ms: Math.round(performance.now() - began) });
      })();
      return stopping;
    };
    return { service, stop, terminateProviderWorker: () => provider.terminate() };
  } catch (e) {
    for (const w of workers) w.terminate();
    store?.close();
    lockDirLock?.release();
    instance.release();
    throw e;
  }
}

/**
 * An enabled runtime the Bridge cannot run is a warning line, not a refusal: the others still serve,
 * and a submit for it answers AGENT_RUNTIME_UNAVAILABLE. Probed after the socket opens, so a slow
 * `--version` never delays startup.
 */
function warnUnavailableRuntimes(probes: RuntimeProbes, audit: AuditLog): void {
  void probes.list().then((list) => {
    for (const r of list) {
      if (!r.available) audit.warn("runtime_unavailable", { runtime: r.name, reason: "its binary is missing or --version failed; run serverfs doctor" });
    }
  });
}

/** The `serverfs bridge` command: start, serve until a signal, shut down. */
export async function runBridge(configPath: string | undefined): Promise<number> {
  const config = loadConfig({ role: "bridge", configPath });
  if (!config.file.bridge.enabled) {
    throw new ConfigError("bridge.enabled: is false, so the Bridge must not run; set [bridge] enabled = true to use agent tasks");
  }
  // Handlers first: a signal during startup must still run the shutdown once the Bridge is up.
  let signals = 0;
  let onSignal: () => void = () => {};
  const received = new Promise<void>((resolve) => {
    onSignal = () => {
      if (++signals > 1) process.exit(1);
      resolve();
    };
  });
  // SIGHUP (a closed terminal, a service manager) is a clean shutdown too, never a silent death
  const audit = openAuditLog(config.server.log_level, config.audit);
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(sig, () => {
      audit.info("signal_received", { signal: sig });
      onSignal();
    });
  }
  // an error nothing caught: the same shutdown, then exit 1 (a failure during startup has nothing to stop yet)
  let started: RunningBridge | null = null;
  installFatalHandlers({ audit, shutdown: () => started?.stop(), boundMs: SHUTDOWN_BOUND_MS + FATAL_MARGIN_MS });
  const bridge = await startBridge(config);
  started = bridge;
  await received;
  return bridge.stop().then(
    () => 0,
    () => 1,
  );
}
