/**
 * Keeping the socket path reachable (docs/bridge-rpc.md#socket-hygiene step 6): a socket file
 * removed or replaced while the Bridge runs would leave it listening on an inode no client can reach,
 * while its instance lock refuses any replacement. So every `CHECK_MS` the path's identity (device,
 * inode) is compared with the socket bound; when it differs, the path is prepared again with the
 * startup hygiene (steps 1–3: a live socket or a foreign entry there is left alone and refused) and a
 * fresh socket is bound and published (step 4). The old listener stops accepting; connections it
 * already had are served to their end.
 *
 * Offers `watchSocketPath`, which the RPC server starts once its first socket is bound.
 */
import { lstatSync, type Stats } from "node:fs";
import type { SocketHandler } from "bun";
import { isServerFsError } from "../../../shared/errors.ts";
import { type Bound, bindSocket, prepareSocketPath, unlinkIfBound } from "./socket-hygiene.ts";

/** How often the path is looked at: a removed socket is back within about this (plus a 0.5 s probe). */
const CHECK_MS = 1_000;

export type SocketLoss = "missing" | "replaced";

export interface SocketWatchOptions<Data> {
  socketPath: string;
  sharingGid: number | null;
  handler: SocketHandler<Data>;
  /** A new socket is bound and published at the path. */
  onRebound: (reason: SocketLoss) => void;
  /** The path could not be taken back (its code); told once until the code changes or a rebind succeeds. */
  onRebindFailed: (reason: SocketLoss, code: string) => void;
}

export interface SocketWatch {
  /** Stops watching, stops accepting and unlinks the path if it is still the socket bound here. */
  close(): void;
}

function lossOf(socketPath: string, bound: Bound<unknown>): SocketLoss | null {
  let st: Stats;
  try {
    st = lstatSync(socketPath);
  } catch {
    return "missing";
  }
  return st.dev === bound.inode.dev && st.ino === bound.inode.ino ? null : "replaced";
}

export function watchSocketPath<Data>(first: Bound<Data>, options: SocketWatchOptions<Data>): SocketWatch {
  const { socketPath, sharingGid, handler } = options;
  let bound = first;
  let closed = false;
  let checking = false;
  let lastFailure: string | null = null;

  const rebind = async (reason: SocketLoss) => {
    try {
      await prepareSocketPath(socketPath, sharingGid);
      if (closed) return;
      const fresh = bindSocket<Data>(socketPath, sharingGid, handler);
      bound.listener.stop(false);
      bound = fresh;
      lastFailure = null;
      options.onRebound(reason);
    } catch (e) {
      const code = isServerFsError(e) ? e.code : "SOCKET_PATH_IN_USE";
      if (code !== lastFailure) options.onRebindFailed(reason, code);
      lastFailure = code;
    }
  };

  const timer = setInterval(() => {
    if (checking || closed) return;
    const loss = lossOf(socketPath, bound);
    if (loss === null) return;
    checking = true;
    void rebind(loss).finally(() => {
      checking = false;
    });
  }, CHECK_MS);
  timer.unref();

  return {
    close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      bound.listener.stop(false);
      unlinkIfBound(socketPath, bound.inode);
    },
  };
}
