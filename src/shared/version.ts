/** The release string: the MCP serverInfo version, the manifest's bridge_version (the protocol version is the envelope's, bridge-protocol/envelope.ts). */
import pkg from "../../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
