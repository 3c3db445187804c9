/** The release string: the MCP serverInfo version, the manifest's bridge_version. */
import pkg from "../../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
export const PROTOCOL_VERSION = 1;
