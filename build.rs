//! Build script: embeds the code generator's templates, and asks the linker to pack the
//! binaries' relative relocations and to keep start-up code together.
//!
//! `agent` is a position-independent executable with ~66,000 relative relocations. Stored as
//! RELA entries (24 bytes each) they are a 1.6 MB table the dynamic loader reads at every start,
//! once in `agent` and once in its script worker, so it sat in both processes' resident memory.
//! Packed (`DT_RELR`, GNU ld 2.38+, glibc 2.36+) the table is ~19 KB: peak RSS of a cold
//! `agent exec` drops by about 3 MB (docs/exec.md, "Packed relocations"). The executable stays
//! position independent (its address is still randomised). An older GNU ld warns that it ignores
//! the option and links as before; a binary linked with it names the glibc version it needs
//! (`GLIBC_ABI_DT_RELR`), so an older glibc refuses it with one line instead of misloading it.
//!
//! It also asks the linker to place the functions a cold `agent exec` runs (listed in
//! `linker/hot-symbols.txt`, written by `bin/hot-symbols`) together at the start of the code.
//! Scattered over 37 MB of code, they made each process map ~10 MB of it: a page fault maps the
//! 64 KB around it, and `agent` and its worker each fault in their own. Packed, a cold
//! `agent exec` peaks at ~16 MB instead of ~34 (docs/exec.md, "Hot code packed together"). Only
//! the order of functions changes. The option is lld's, the linker Rust uses by default on
//! x86_64 Linux, so it is passed only there and only when no other linker was chosen;
//! `AGENT_NO_SYMBOL_ORDER=1` leaves it out.

fn main() {
    minijinja_embed::embed_templates!("templates");

    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = std::path::Path::new(&manifest).join("linker/hot-symbols.txt");
    // `-Wl,` splits its argument at commas.
    if uses_default_lld() && !order.to_string_lossy().contains(',') {
        println!("cargo:rerun-if-changed=linker/hot-symbols.txt");
        println!("cargo:rustc-link-arg-bin=agent=-Wl,--symbol-ordering-file={}", order.display());
        // The list names functions of one build; another build may lack some of them.
        println!("cargo:rustc-link-arg-bin=agent=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the binary is linked by Rust's own lld: its default for x86_64 Linux (GNU), unless a
/// linker was set in cargo's configuration (`RUSTC_LINKER`) or in the flags.
fn uses_default_lld() -> bool {
    println!("cargo:rerun-if-env-changed=AGENT_NO_SYMBOL_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("link")
        && std::env::var_os("AGENT_NO_SYMBOL_ORDER").is_none_or(|v| v.is_empty() || v == "0")
}
