/**
 * The Bridge RPC server, protocol 1 (docs/bridge-rpc.md#socket-and-framing): an AF_UNIX stream socket prepared and bound
 * with the docs/bridge-rpc.md#peer-check hygiene, a peer check on every accept, NDJSON framing and the docs/bridge-rpc.md#envelope envelope rules,
 * connections served concurrently and each strictly in order. Offers `startRpcServer`,
 * `RpcServerOptions`, `RpcServer` (and re-exports the handler types).
 *
 * While it runs, the socket path is watched (`socket-watch.ts`): a socket file removed or replaced is bound
 * again within about a second. Shutdown (docs/task-model.md#shutdown step 1): `close()` stops watching and accepting, unlinks the socket if it is still the inode
 * bound here, and aborts every in-flight request's signal so long polls return at once. Open
 * connections stay: their further requests are answered BRIDGE_CLOSED until the process exits.
 */

import type { RpcResponse } from "../../../shared/bridge-protocol/envelope.ts";
import { type Connection, Connection as ConnectionImpl, type ConnectionSocket } from "./connection.ts";
import type { MethodHandlers } from "./dispatch.ts";
import { type AllowedPeer, resolvePeer } from "./peer-check.ts";
import { bindSocket, prepareSocketPath } from "./socket-hygiene.ts";
import { type SocketLoss, watchSocketPath } from "./socket-watch.ts";

export type { MethodHandler, MethodHandlers, MethodTable, RequestContext } from "./dispatch.ts";

export interface RpcServerOptions {
  /** Absolute, at most 107 bytes (checked by the config loader). */
  socketPath: string;
  /** `allowed_peer_uid` / `allowed_peer_gid`; `-1` means the Bridge's own. */
  peer: AllowedPeer;
  /** Group G when group sharing is on (docs/bridge-rpc.md#peer-check), else null. */
  sharingGid: number | null;
  handlers: MethodHandlers;
  /** True once shutdown has begun: every request is then answered BRIDGE_CLOSED. */
  isClosing: () => boolean;
  /** Told about every unexpected handler failure, for the operator's log. */
  onUnexpected?: (method: string, error: unknown) => void;
  /** Told the size of every response line, so the Bridge knows how much it has answered since it last gave memory back. */
  onWrote?: ((bytes: number) => void) | undefined;
  /** Told about every answered request (method, outcome, milliseconds), for the debug log. */
  onAnswered?: ((method: string | null, response: RpcResponse, ms: number) => void) | undefined;
  /** Told when the socket path was found removed or replaced and a fresh socket now serves there. */
  onRebound?: (reason: SocketLoss) => void;
  /** Told when the socket path could not be taken back (once per failure code). */
  onRebindFailed?: (reason: SocketLoss, code: string) => void;
}

export interface RpcServer {
  close(): Promise<void>;
}

export async function startRpcServer(options: RpcServerOptions): Promise<RpcServer> {
  const { socketPath, sharingGid } = options;
  const stopped = new AbortController();
  const connectionOptions = {
    dispatch: {
      handlers: options.handlers,
      isClosing: () => stopped.signal.aborted || options.isClosing(),
      onUnexpected: options.onUnexpected,
      onAnswered: options.onAnswered,
    },
    allowed: resolvePeer(options.peer),
    serverSignal: stopped.signal,
    wrote: options.onWrote,
  };

  const handler = {
    open(socket: ConnectionSocket) {
      socket.data = new ConnectionImpl(socket, connectionOptions);
      socket.data.open();
    },
    data: (socket: ConnectionSocket, chunk: Buffer) => socket.data?.onData(chunk),
    end: (socket: ConnectionSocket) => socket.data?.onEnd(),
    drain: (socket: ConnectionSocket) => socket.data?.onDrain(),
    close: (socket: ConnectionSocket) => socket.data?.onClose(),
  };
  await prepareSocketPath(socketPath, sharingGid);
  const watch = watchSocketPath(bindSocket<Connection | undefined>(socketPath, sharingGid, handler), {
    socketPath,
    sharingGid,
    handler,
    onRebound: (reason) => options.onRebound?.(reason),
    onRebindFailed: (reason, code) => options.onRebindFailed?.(reason, code),
  });

  return {
    async close() {
      if (stopped.signal.aborted) return;
      stopped.abort();
      watch.close();
    },
  };
}
