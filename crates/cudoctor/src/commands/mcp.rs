//! `cudoctor mcp`: the Model Context Protocol server of cudoctor-mcp on standard input and
//! output, its tool calls run as this same binary.

use crate::Outcome;

pub fn run() -> anyhow::Result<Outcome> {
    let server = cudoctor_mcp::Server {
        version: crate::build_info::version_line(),
        calls: &cudoctor_mcp::SelfCalls,
    };
    cudoctor_mcp::serve(std::io::stdin().lock(), std::io::stdout().lock(), &server)?;
    Ok(Outcome::Healthy)
}
