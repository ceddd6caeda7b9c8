//! Capping an Endpoints object at 1000 addresses.

use crate::endpoints::MAX_ADDRESSES;
use k8s_openapi::api::core::v1::EndpointSubset;

/// Cuts the subsets down to [`MAX_ADDRESSES`] addresses in total; returns true when it had
/// to. Ready addresses are kept first: if they fit, the remaining room is shared among the
/// not-ready lists in proportion to their sizes; if not, the ready lists are cut in
/// proportion and every not-ready list is emptied. Each share is rounded up and capped at
/// what is still free, so later subsets may get less than their share.
pub fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let len = |v: &Option<Vec<_>>| v.as_ref().map_or(0, Vec::len);
    let total_ready: usize = subsets.iter().map(|s| len(&s.addresses)).sum();
    let total_not_ready: usize = subsets.iter().map(|s| len(&s.not_ready_addresses)).sum();
    if total_ready + total_not_ready <= MAX_ADDRESSES {
        return false;
    }
    let cut_ready = total_ready > MAX_ADDRESSES;
    let (room, total) = if cut_ready {
        (MAX_ADDRESSES, total_ready)
    } else {
        (MAX_ADDRESSES - total_ready, total_not_ready)
    };
    let mut free = room;
    for subset in subsets.iter_mut() {
        let in_subset = if cut_ready {
            len(&subset.addresses)
        } else {
            len(&subset.not_ready_addresses)
        };
        let share = ((in_subset as f64 / total as f64) * room as f64).ceil() as usize;
        let keep = share.min(free);
        if cut_ready {
            if let Some(list) = subset.addresses.as_mut() {
                list.truncate(keep);
            }
            subset.not_ready_addresses = None;
            free -= len(&subset.addresses);
        } else {
            if let Some(list) = subset.not_ready_addresses.as_mut() {
                list.truncate(keep);
            }
            free -= len(&subset.not_ready_addresses);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::EndpointAddress;

    fn list(n: usize) -> Option<Vec<EndpointAddress>> {
        (n > 0).then(|| {
            (0..n)
                .map(|i| EndpointAddress {
                    ip: format!("10.0.{}.{}", i / 250, i % 250),
                    ..Default::default()
                })
                .collect()
        })
    }

    fn subset(ready: usize, not_ready: usize) -> EndpointSubset {
        EndpointSubset {
            addresses: list(ready),
            not_ready_addresses: list(not_ready),
            ports: None,
        }
    }

    fn counts(s: &[EndpointSubset]) -> Vec<(usize, usize)> {
        s.iter()
            .map(|s| {
                (
                    s.addresses.as_ref().map_or(0, Vec::len),
                    s.not_ready_addresses.as_ref().map_or(0, Vec::len),
                )
            })
            .collect()
    }

    #[test]
    fn at_most_1000_addresses_are_left_alone() {
        let mut s = vec![subset(600, 400)];
        assert!(!truncate(&mut s));
        assert_eq!(counts(&s), vec![(600, 400)]);
    }

    #[test]
    fn ready_addresses_fit_and_not_ready_share_the_rest_proportionally() {
        // 700 ready; 300 of room shared by not-ready lists of 200, 100 and 100:
        // ceil(200/400*300)=150, ceil(100/400*300)=75, ceil(75)=75.
        let mut s = vec![subset(300, 200), subset(200, 100), subset(200, 100)];
        assert!(truncate(&mut s));
        assert_eq!(counts(&s), vec![(300, 150), (200, 75), (200, 75)]);
    }

    #[test]
    fn rounding_up_starves_the_last_subset() {
        // 993 ready leave room for 7 not-ready of 9: shares ceil(2.33)=3, 3, then only 1.
        let mut s = vec![subset(331, 3), subset(331, 3), subset(331, 3)];
        assert!(truncate(&mut s));
        assert_eq!(counts(&s), vec![(331, 3), (331, 3), (331, 1)]);
    }

    #[test]
    fn too_many_ready_addresses_cut_ready_proportionally_and_drop_not_ready() {
        let mut s = vec![subset(900, 50), subset(600, 10)];
        assert!(truncate(&mut s));
        // ceil(900/1500*1000)=600, then ceil(400)=400.
        assert_eq!(counts(&s), vec![(600, 0), (400, 0)]);
    }
}
