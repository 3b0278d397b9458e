//! Pages a lookup read beside its item, kept for the fields they were read for.

use super::*;

/// Pages of connections that a lookup read at the same time as its item, so that the page does
/// not wait for the item's GetItem: one request's worth, each taken once by the field it was
/// read for (same connection, same parent key, same arguments).
#[derive(Default)]
pub struct PagesAhead(Mutex<Vec<PageAhead>>);

type PageAhead = (
    &'static str,
    String,
    Vec<(Name, Value)>,
    Option<Vec<&'static str>>,
    ApiResult<PageValue>,
);

impl std::fmt::Debug for PagesAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagesAhead").finish_non_exhaustive()
    }
}

impl PagesAhead {
    /// Keeps a page read for `label` under the parent `key` with `arguments`, of items read with
    /// `projection`.
    pub fn put(
        &self,
        label: &'static str,
        key: String,
        arguments: Vec<(Name, Value)>,
        projection: Option<Vec<&'static str>>,
        page: ApiResult<PageValue>,
    ) {
        self.lock().push((label, key, arguments, projection, page));
    }

    /// Whether no page is waiting (the usual case: then nothing else need be computed).
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Takes the page read for `label` under `key` with `arguments` and `projection`, if one
    /// was (the same connection selected twice under aliases, with different fields, reads
    /// different attributes).
    pub fn take(
        &self,
        label: &'static str,
        key: &str,
        arguments: &[(Name, Value)],
        projection: &Option<Vec<&'static str>>,
    ) -> Option<ApiResult<PageValue>> {
        let mut pages = self.lock();
        if pages.is_empty() {
            return None;
        }
        let at = pages.iter().position(|(l, k, args, p, _)| {
            *l == label && k == key && args.as_slice() == arguments && p == projection
        })?;
        Some(pages.swap_remove(at).4)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PageAhead>> {
        // The list stays valid even if a holder panicked.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The text that tells parents apart in [`PagesAhead`]: the key's typed bytes.
pub fn parent_text(model: &Model, entity: EntityId, item: &Item) -> Option<String> {
    let key = Key::from_item(item, model.table_of(entity).key).ok()?;
    Some(format!("{:?}", key.to_bytes()))
}
