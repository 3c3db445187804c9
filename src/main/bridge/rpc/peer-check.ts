/**
 * The peer check of docs/bridge-rpc.md#peer-check: the kernel-attested uid and gid of the process at the other end
 * of an accepted Unix socket (SO_PEERCRED) must equal the allowed ones, `-1` meaning the Bridge's
 * own. Credentials that cannot be read are a refusal. Offers `AllowedPeer`, `resolvePeer`,
 * `peerAllowed`, `socketFd`.
 */
import { peerCredentials } from "../../../shared/ffi/libc.ts";

export interface AllowedPeer {
  uid: number;
  gid: number;
}

/** Resolves `-1` to this process's own uid / gid. */
export function resolvePeer(peer: AllowedPeer): AllowedPeer {
  return {
    uid: peer.uid === -1 ? process.getuid!() : peer.uid,
    gid: peer.gid === -1 ? process.getgid!() : peer.gid,
  };
}

/**
 * The descriptor of a `Bun.listen` socket. Bun exposes it as `socket.fd` at runtime although its
 * type declarations omit it; anything but a non-negative integer means "unreadable".
 */
export function socketFd(socket: object): number | null {
  const fd = (socket as { fd?: unknown }).fd;
  return typeof fd === "number" && Number.isInteger(fd) && fd >= 0 ? fd : null;
}

export function peerAllowed(fd: number | null, allowed: AllowedPeer): boolean {
  if (fd === null) return false;
  const cred = peerCredentials(fd);
  return cred !== null && cred.uid === allowed.uid && cred.gid === allowed.gid;
}
