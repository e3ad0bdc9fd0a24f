//! TypeScript API generation (`agent mcp generate`).
