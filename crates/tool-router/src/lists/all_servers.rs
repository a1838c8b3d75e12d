//! Every server's listing at once (`list_mcp_resources` without a `server`): each server's
//! kept listing, filtered and sorted, fitted together into one payload by `shared_out`.

use mcp_backend::{ListKind, Reuse, SharedListing};
use rmcp::model::{Resource, ResourceTemplate};
use router_protocol::ResourceChange;

use crate::handlers::{Failed, Produced, fitted, into_produced, shut_down};
use crate::lists::handler::{McpListHandler, worst_continuation};
use crate::lists::payload::{
    Incomplete, Kind, Payload, WithServer, aggregate_summary, expected_len, failures, model_view,
    shared_out, write_whole,
};
use crate::lists::shape::{
    Continuation, Filter, Request, carried, for_assistant, json_len, position, sizes_within,
    sort_by_priority,
};

impl McpListHandler {
    pub(super) async fn all_servers(&self, request: Request) -> Result<Produced, Failed> {
        // A filtered list may be answered from the backend's kept listings; a plain list
        // always asks.
        let reuse = if request.filter.is_empty() { Reuse::Never } else { Reuse::Kept };
        let listings =
            self.backend.list_all(self.kind, reuse).await.map_err(|_| shut_down(None))?;
        let changes = self.backend.take_resource_changes();
        match self.kind {
            ListKind::Resources => self.all_servers_of::<Resource>(&listings, &request, &changes),
            ListKind::Templates => {
                self.all_servers_of::<ResourceTemplate>(&listings, &request, &changes)
            }
        }
    }

    /// Per server: the indices of the items the model may see (and the filter selects), in
    /// the order shown. A kept listing answers a query from its search index.
    pub(super) fn candidates<T: Kind>(
        &self,
        listing: &SharedListing,
        filter: &Filter,
    ) -> Vec<usize> {
        let matcher = filter.matcher();
        let items = T::slice(&listing.listing.items);
        let searched = match (listing.kept_at, matcher.query()) {
            (Some(_), Some(query)) => self.search.search(&listing.listing, items, query),
            _ => None,
        };
        let all: Box<dyn Iterator<Item = usize>> = match searched {
            Some(found) => Box::new(found.into_iter()),
            None => Box::new(0..items.len()),
        };
        let mut chosen: Vec<usize> = all
            .filter(|i| {
                for_assistant(&items[*i], self.every_audience) && matcher.matches(&items[*i])
            })
            .collect();
        if filter.by_priority {
            sort_by_priority(items, &mut chosen);
        }
        chosen
    }

    /// The all-server payload: every server's visible (and matching) items, as many as fit,
    /// the budget shared so that every server with items is represented — all at once when
    /// they may be.
    fn all_servers_of<T: Kind>(
        &self,
        listings: &[SharedListing],
        request: &Request,
        changes: &[ResourceChange],
    ) -> Result<Produced, Failed> {
        self.everything_at_once::<T>(listings, request, changes)
            .unwrap_or_else(|| self.shared_among::<T>(listings, request, changes))
    }

    /// The all-server payload with the budget shared (see [`share`](super::shape::share)).
    fn shared_among<T: Kind>(
        &self,
        listings: &[SharedListing],
        request: &Request,
        changes: &[ResourceChange],
    ) -> Result<Produced, Failed> {
        let filter = &request.filter;
        let candidates: Vec<Vec<usize>> =
            listings.iter().map(|l| self.candidates::<T>(l, filter)).collect();
        let limit = carried(request.limit);
        let continuation = |s: usize, next: usize| -> Continuation {
            if filter.by_priority {
                let filter = filter.clone();
                return Continuation { page: None, offset: next, filter, limit };
            }
            let listing = &listings[s].listing;
            let index = candidates[s].get(next).copied().unwrap_or(T::slice(&listing.items).len());
            let (page, offset) = position(&listing.page_starts, index);
            Continuation { page, offset, filter: filter.clone(), limit }
        };
        let listed_at = oldest_kept(listings);
        let envelope = self.aggregate_envelope::<T>(listings, &candidates, request, &listed_at);
        let room = self.budget.saturating_sub(json_len(&envelope));
        let (errors, held) = (envelope.errors, envelope.held);
        let payload_of = |shown: &[usize]| {
            let mut payload = Payload::<T>::new(None);
            payload.items.reserve_exact(shown.iter().sum());
            payload.errors = errors.clone();
            payload.held = held.clone();
            payload.listed_at = listed_at.clone();
            payload.matched = filter.selects().then(|| candidates.iter().map(Vec::len).sum());
            for (s, shared) in listings.iter().enumerate() {
                let listing = &shared.listing;
                let items = T::slice(&listing.items);
                payload.items.extend(candidates[s][..shown[s]].iter().map(|i| WithServer {
                    server: listing.server.as_str(),
                    item: model_view(&items[*i]),
                }));
                if shown[s] < candidates[s].len() {
                    payload.incomplete.push(Incomplete {
                        server: listing.server.clone(),
                        shown: shown[s],
                        total: candidates[s].len(),
                        next_cursor: continuation(s, shown[s]).encode(),
                    });
                }
            }
            payload
        };
        let measure = || {
            let each = listings.iter().zip(&candidates).map(|(shared, chosen)| {
                let (server, items) = (&shared.listing.server, T::slice(&shared.listing.items));
                chosen.iter().map(move |i| WithServer { server, item: model_view(&items[*i]) })
            });
            each.map(|items| sizes_within(items, room, request.limit)).collect()
        };
        let every: Vec<usize> = candidates.iter().map(Vec::len).collect();
        let (text, shown) = shared_out(&every, room, request.limit, changes, payload_of, measure);
        into_produced(text, aggregate_summary(listings, shown))
    }
}

impl McpListHandler {
    /// Every item of every server the model may see, when all of them may be shown (no filter,
    /// no limit they pass), in one pass over the items: each chosen and written as it comes
    /// (`write_whole`). `None` when they may not, or pass the budget: the caller shares it out.
    fn everything_at_once<T: Kind>(
        &self,
        listings: &[SharedListing],
        request: &Request,
        changes: &[ResourceChange],
    ) -> Option<Result<Produced, Failed>> {
        let total: usize = listings.iter().map(|l| T::slice(&l.listing.items).len()).sum();
        if !request.filter.is_empty() || total > request.limit {
            return None;
        }
        let mut envelope = Payload::<T>::new(None);
        envelope.errors = failures(listings);
        envelope.listed_at = oldest_kept(listings);
        envelope.held = self.held(None);
        let room = self.budget.saturating_sub(json_len(&envelope));
        let every_audience = self.every_audience;
        let items = listings.iter().flat_map(|shared| {
            let server = shared.listing.server.as_str();
            let items = T::slice(&shared.listing.items).iter();
            let shown = items.filter(move |item| for_assistant(*item, every_audience));
            shown.map(move |item| WithServer { server, item: model_view(item) })
        });
        let mut text = Vec::with_capacity(expected_bytes::<T>(listings).min(room));
        let shown = match write_whole(&mut text, &mut envelope, items, changes, room) {
            Ok(Some(shown)) => shown,
            Ok(None) => return None,
            Err(e) => return Some(into_produced(Err(e), aggregate_summary(listings, 0))),
        };
        Some(into_produced(Ok(fitted(text)), aggregate_summary(listings, shown)))
    }
}

/// About how long the payload of every item of `listings` is (see `expected_len`).
fn expected_bytes<T: Kind>(listings: &[SharedListing]) -> usize {
    let slices: Vec<(&str, &[T])> =
        listings.iter().map(|l| (l.listing.server.as_str(), T::slice(&l.listing.items))).collect();
    let count = slices.iter().map(|(_, items)| items.len()).sum();
    expected_len(count, |mut i| {
        for (server, items) in &slices {
            if i < items.len() {
                return json_len(&WithServer { server, item: model_view(&items[i]) });
            }
            i -= items.len();
        }
        0
    })
}

impl McpListHandler {
    /// What an every-server payload costs besides its items, at most: every server with items
    /// incomplete, with the longest cursor it could get, and what is held.
    fn aggregate_envelope<'a, T: Kind>(
        &self,
        listings: &'a [SharedListing],
        candidates: &[Vec<usize>],
        request: &Request,
        listed_at: &Option<String>,
    ) -> Payload<'a, T> {
        let mut envelope = Payload::<T>::new(None);
        envelope.errors = failures(listings);
        envelope.matched = request.filter.selects().then_some(usize::MAX);
        envelope.listed_at = listed_at.clone();
        envelope.held = self.held(None);
        for (shared, chosen) in listings.iter().zip(candidates) {
            if !chosen.is_empty() {
                let worst = worst_continuation(&shared.listing, request);
                envelope.incomplete.push(Incomplete {
                    server: shared.listing.server.clone(),
                    shown: usize::MAX,
                    total: usize::MAX,
                    next_cursor: worst.encode(),
                });
            }
        }
        envelope
    }
}

/// When every listing was kept, the oldest one's time.
fn oldest_kept(listings: &[SharedListing]) -> Option<String> {
    let times = listings.iter().map(|l| l.kept_at).collect::<Option<Vec<_>>>()?;
    times.into_iter().min().map(mcp_backend::rfc3339)
}
