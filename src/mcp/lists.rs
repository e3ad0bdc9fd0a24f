//! The lists one connection keeps besides its tools: resources (with templates) and prompts,
//! listed when first asked for and marked stale by the server's `list_changed` (the client
//! handler marks, `primitives` lists). Its own file so that neither the handler nor `connect`
//! depends on the manager.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

use rmcp::model::{Prompt, Resource, ResourceTemplate};
use serde::Serialize;

/// A server's resources and resource templates.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Resources {
    pub resources: Vec<Resource>,
    #[serde(rename = "resourceTemplates")]
    pub templates: Vec<ResourceTemplate>,
}

/// The lists one connection keeps: `None` until first listed, listed again after `list_changed`.
#[derive(Default)]
pub struct Lists {
    pub(super) resources_stale: AtomicBool,
    pub(super) prompts_stale: AtomicBool,
    pub(super) resources: RwLock<Option<Arc<Resources>>>,
    pub(super) prompts: RwLock<Option<Arc<Vec<Prompt>>>>,
}
