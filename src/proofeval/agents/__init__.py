"""What an agent gets: the tools over a benchmark (tools.py), served over MCP
(mcp_server.py) or given to a model as function-calling tools (toolbox.py)."""
