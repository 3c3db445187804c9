/**
 * The MCP tool names by group, each in the order of docs/mcp-tools.md's tables, which is the order
 * `tools/list` answers in. The server lists the filesystem tools always, the binary tools when a
 * workdir allows transfers and the agent tools when the Bridge is enabled.
 */
export const FILESYSTEM_TOOLS = [
  "list_workdirs",
  "list_directory",
  "find_files",
  "search_text",
  "read_text_file",
  "stat_file",
  "create_text_file",
  "edit_text_file",
  "delete_file",
  "create_directory",
  "delete_directory",
];

export const BINARY_TOOLS = ["download_binary_file", "upload_binary_file"];

export const AGENT_TOOLS = [
  "list_agent_runtimes",
  "submit_agent_task",
  "get_agent_task",
  "read_agent_task_events",
  "respond_agent_approval",
  "answer_agent_question",
  "send_agent_message",
  "cancel_agent_task",
  "read_agent_task_result",
];
