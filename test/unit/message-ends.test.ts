import { describe, expect, test } from "bun:test";
import { readMessageIdFromEnd, readMessagePrefix } from "../../src/main/mcp/message-ends.ts";

const UPLOAD = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"upload_binary_file","arguments":{"data_base64":"AAAA';

describe("readMessagePrefix reads id, method and tool from a message's first bytes", () => {
  test.each([
    [UPLOAD, { id: 7, method: "tools/call", tool: "upload_binary_file" }],
    [' { "id" : "a\\"b" , "method":"x"', { id: 'a"b', method: "x", tool: null }],
    ['{"jsonrpc":"2.0","method":"tools/call","id":-12.5e1,"params":', { id: -125, method: "tools/call", tool: null }],
    ['{"params":{"arguments":{"id":1,"name":"n"},"name":"t","x":[{"id":2}]},"id":3,"m', { id: 3, method: null, tool: "t" }],
    ['{"key":"has \\"id\\": 9 inside","id":4,', { id: 4, method: null, tool: null }],
    ['{"method":"notifications/x","params":{"data":"AAAA', { id: null, method: "notifications/x", tool: null }],
    ['{"params":{"name":"upload_binary_file","arguments":{"id":1,"data":"AAAA', { id: null, method: null, tool: "upload_binary_file" }],
  ])("%s", (prefix, expected) => {
    expect(readMessagePrefix(prefix)).toEqual(expected);
  });

  test.each([
    ['{"jsonrpc":"2.0","id":12'],
    ['{"jsonrpc":"2.0","id":"abc'],
    ['[{"id":1}]'],
    ['{"id":null,"method":"x"}'],
    ['{"a":1},"id":2,'],
    ['{"x":[1,2,{"id":5}],"name":"n"'],
    ["not json"],
  ])("no id in %s", (prefix) => {
    expect(readMessagePrefix(prefix).id).toBeNull();
  });
});

describe("readMessageIdFromEnd reads the top-level id from a message's last bytes", () => {
  test.each([
    ['AAAA"}},"jsonrpc":"2.0","id":7}\n', 7],
    ['AAAA"}},"jsonrpc":"2.0","id":"x\\"y"}', 'x"y'],
    ['AA"}}, "id" : -3 , "jsonrpc":"2.0" }\r\n', -3],
    ['"x"]}},"id":"k","extra":{"a":[1,{"b":"}"}]},"n":true}', "k"],
    ['"x":"has \\"id\\":1 in it"},"id":9}', 9],
    ['{"jsonrpc":"2.0","id":5,"method":"m"}', 5],
  ])("%s", (suffix, id) => {
    expect(readMessageIdFromEnd(suffix)).toBe(id);
  });

  test.each([
    ['AAAA"}},"jsonrpc":"2.0"}'],
    ['{"method":"m","params":{"id":1}}'],
    ['AAAA"}},"id":null}'],
    ['3,4,5]},"jsonrpc":"2.0"}'],
    ['AAAA"}'],
    ['AAAA"}},"id":7'],
    ['\\"}},"id"'],
    [""],
  ])("none in %s", (suffix) => {
    expect(readMessageIdFromEnd(suffix)).toBeNull();
  });
});
