//! Build script: embeds the code generator's templates, and asks the linker to pack the
//! binaries' relative relocations.
//!
//! `agent` is a position-independent executable with ~66,000 relative relocations. Stored as
//! RELA entries (24 bytes each) they are a 1.6 MB table the dynamic loader reads at every start,
//! once in `agent` and once in its script worker, so it sat in both processes' resident memory.
//! Packed (`DT_RELR`, GNU ld 2.38+, glibc 2.36+) the table is ~19 KB: peak RSS of a cold
//! `agent exec` drops by about 3 MB (docs/exec.md, "Packed relocations"). The executable stays
//! position independent (its address is still randomised). An older GNU ld warns that it ignores
//! the option and links as before; a binary linked with it names the glibc version it needs
//! (`GLIBC_ABI_DT_RELR`), so an older glibc refuses it with one line instead of misloading it.

fn main() {
    minijinja_embed::embed_templates!("templates");

    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
