// Hook inputs of the shapes Claude Code documents (https://code.claude.com/docs/en/hooks), for the
// unit tests of the hook's core and the end-to-end tests of `baton hook claude-code`.
export const PRE_TOOL_USE = {
  session_id: "0b7e2c55-9d7e-4f65-8f43-2a8e5d0c1f10",
  transcript_path: "/home/ana/.claude/projects/shop/0b7e2c55.jsonl",
  cwd: "/home/ana/shop",
  permission_mode: "default",
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: { command: "npm publish", description: "Publish the package", timeout: 120000, run_in_background: false },
  tool_use_id: "toolu_01Kq7w9ZrT2Xy4BvN8mLpQeF",
};
export const PERMISSION_REQUEST = {
  session_id: "0b7e2c55-9d7e-4f65-8f43-2a8e5d0c1f10",
  transcript_path: "/home/ana/.claude/projects/shop/0b7e2c55.jsonl",
  cwd: "/home/ana/shop",
  permission_mode: "default",
  hook_event_name: "PermissionRequest",
  tool_name: "Bash",
  tool_input: { command: "rm -rf dist", description: "Remove the build output" },
  permission_suggestions: [{ type: "addRules", rules: [{ toolName: "Bash", ruleContent: "rm -rf dist" }], behavior: "allow", destination: "localSettings" }],
};

