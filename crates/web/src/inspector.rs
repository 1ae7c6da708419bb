//! The inspector's body: the selection's title, its actions first (Kill,
//! Restart, Pause), why it matters, its facts with glossary terms marked at
//! their first use, and what it holds (messages in flight, files on disk,
//! its latest records, how a read finds an offset).

use yew::prelude::*;

use crate::map_model::Inspection;
use crate::view_model::RecordChip;

/// The inspector's body for `inspection` (or a prompt to select
/// something), with its `actions` and a replica's latest records.
pub fn inspector_body(inspection: Option<&Inspection>, actions: Html, strip: &[RecordChip]) -> Html {
    html! {
        { match &inspection {
            Some(inspection) => {
                // Glossary terms, marked at their first use in the inspector.
                let seen = std::cell::RefCell::new(std::collections::BTreeSet::new());
                let gloss = |text: &str| crate::lesson::glossed(text, &mut seen.borrow_mut());
                html! { <>
                <h4 data-testid="inspector-title">{ &inspection.title }</h4>
                // What a learner does comes first: Kill, Restart, Pause.
                <div class="controls" role="toolbar" aria-label="actions" data-testid="inspector-actions">{ actions }</div>
                <p class="why">{ gloss(&inspection.why) }</p>
                <dl data-testid="inspector-facts">
                    { for inspection.facts.iter().map(|(name, value)| html! { <><dt>{ gloss(name) }</dt><dd>{ value }</dd></> }) }
                </dl>
                { if inspection.messages.is_empty() { html! {} } else { html! {
                    <ul class="messages-now" data-testid="inspector-messages" tabindex="0" aria-label="messages in flight">
                        { for inspection.messages.iter().map(|line| html! { <li>{ line }</li> }) }
                    </ul>
                } } }
                { if inspection.files.is_empty() { html! {} } else { html! {
                    <details class="files" data-testid="inspector-files" open=true>
                        <summary>{ "Files on disk" }</summary>
                        <ul>
                            { for inspection.files.iter().map(|(name, size, holds)| html! {
                                <li><code>{ name }</code>{ if size.is_empty() { html! {} } else { html! { <span class="muted">{ format!(" {size} · {holds}") }</span> } } }</li>
                            }) }
                        </ul>
                    </details>
                } } }
                { match strip {
                    strip if !strip.is_empty() => html! {
                        <details class="record-strip" data-testid="inspector-records" open=true>
                            <summary>{ "Latest records, oldest first" }</summary>
                            <p class="muted">{ "One colour per key. A key's records stay in the order they were written within its partition; records in different partitions have no order between them. Dashed: above the high watermark, not yet readable." }</p>
                            <ol>
                                { for strip.iter().map(|chip| html! {
                                    <li class={classes!("record-chip", format!("hue-{}", chip.hue), (!chip.committed).then_some("uncommitted"), chip.tombstone.then_some("tombstone"))}
                                        data-offset={chip.offset.to_string()} data-key={chip.key.clone().unwrap_or_default()}
                                        title={format!("offset {}{}", chip.offset, if chip.tombstone { " (tombstone: null value)" } else { "" })}>
                                        <span class="record-offset">{ chip.offset }</span>
                                        <span class="record-key">{ chip.key.clone().unwrap_or_else(|| "(no key)".into()) }</span>
                                    </li>
                                }) }
                            </ol>
                        </details>
                    },
                    _ => html! {},
                } }
                { if inspection.lookup.is_empty() { html! {} } else { html! {
                    <details class="lookup" data-testid="inspector-lookup">
                        <summary>{ "How a read finds an offset" }</summary>
                        <ol>{ for inspection.lookup.iter().map(|step| html! { <li>{ step }</li> }) }</ol>
                    </details>
                } } }
            </> }
            }
            None => html! { <p class="muted">{ "Select a broker, a replica row, a controller, the producer, a group, a member or an edge." }</p> },
        } }
    }
}

/// On a phone, the selection's summary at the foot of the screen: its
/// title, three facts, its actions, ✕ (`on_close`), and "Everything about
/// it" (`on_more`), which goes to the full inspector.
pub fn selection_sheet(
    inspection: &Inspection,
    actions: Html,
    on_close: Callback<MouseEvent>,
    on_more: Callback<()>,
) -> Html {
    let more = Callback::from(move |event: MouseEvent| {
        event.prevent_default();
        on_more.emit(());
        if let Some(element) = web_sys::window()
            .and_then(|window| window.document())
            .and_then(|document| document.get_element_by_id("inspector-full"))
        {
            element.scroll_into_view();
        }
    });
    html! {
        <div class="selection-sheet" data-testid="selection-sheet" role="region" aria-label={format!("selected: {}", inspection.title)}>
            <div class="sheet-head">
                <strong data-testid="sheet-title">{ &inspection.title }</strong>
                <button type="button" data-testid="sheet-close" aria-label="close the summary" onclick={on_close}>{ "✕" }</button>
            </div>
            <dl class="sheet-facts">
                { for inspection.facts.iter().take(3).map(|(name, value)| html! { <><dt>{ name }</dt><dd>{ value }</dd></> }) }
            </dl>
            <div class="controls" role="toolbar" aria-label="actions">{ actions }</div>
            <a href="#inspector-full" data-testid="sheet-more" onclick={more}>{ "Everything about it ↓" }</a>
        </div>
    }
}
