/**
 * The modes of everything ServerFS keeps for its own user (docs/deployment.md#layout):
 * private files 0600 in private directories 0700. With group sharing (docs/bridge-rpc.md#peer-check,
 * docs/task-model.md#lease-files-and-the-active-slot-guard) the lock directory and the socket
 * directory become 0750, lease and guard files 0640, and the socket 0660 (a peer must write to
 * connect). Offers the modes, the mode for a sharing group (`null`: no sharing), the permission
 * bits of a stat mode, the "is it ours" and "no group or other bit" checks and the octal form
 * messages show.
 */
export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;
export const GROUP_FILE = 0o640;
export const GROUP_DIR = 0o750;
export const GROUP_SOCKET = 0o660;

export const fileMode = (sharingGid: number | null): number => (sharingGid === null ? PRIVATE_FILE : GROUP_FILE);
export const dirMode = (sharingGid: number | null): number => (sharingGid === null ? PRIVATE_DIR : GROUP_DIR);
export const socketMode = (sharingGid: number | null): number => (sharingGid === null ? PRIVATE_FILE : GROUP_SOCKET);

/** The permission bits of a stat mode (the file type dropped). */
export const permissionBits = (mode: number): number => mode & 0o7777;

/** The uid everything private must belong to: this process's. */
export const ownUid = (): number => process.getuid?.() ?? -1;

/** No permission bit for group or others. */
export const isOwnerOnly = (mode: number | bigint): boolean => (BigInt(mode) & 0o077n) === 0n;

/** Whether group or others may write: what makes a directory unsafe to hold the socket. */
export const othersMayWrite = (mode: number): boolean => (mode & 0o022) !== 0;

/** `0600`, as messages and docs write a mode. */
export const octal = (mode: number): string => `0${permissionBits(mode).toString(8)}`;
