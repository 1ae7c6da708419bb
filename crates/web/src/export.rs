//! A "show the Mermaid text" toggle with a copy button, shared by the map
//! (flowchart) and the sequence steps (sequenceDiagram). The text is made
//! only while it is shown.

use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ExportProps {
    /// The toggle's label.
    pub label: AttrValue,
    /// The text area's accessible name.
    pub description: AttrValue,
    /// Test ids: the toggle, the text area, the copy button.
    pub ids: (AttrValue, AttrValue, AttrValue),
    /// Makes the text.
    pub text: Callback<(), String>,
}

#[function_component(MermaidExport)]
pub fn mermaid_export(props: &ExportProps) -> Html {
    let open = use_state(|| false);
    let copied = use_state(|| false);
    let text = (*open).then(|| props.text.emit(()));
    let toggle = {
        let open = open.clone();
        let copied = copied.clone();
        Callback::from(move |_: MouseEvent| {
            copied.set(false);
            open.set(!*open);
        })
    };
    let copy = {
        let text = text.clone().unwrap_or_default();
        let copied = copied.clone();
        Callback::from(move |_: MouseEvent| {
            if let Some(window) = web_sys::window() {
                let _ = window.navigator().clipboard().write_text(&text);
                copied.set(true);
            }
        })
    };
    let (toggle_id, text_id, copy_id) = props.ids.clone();
    html! {
        <>
            <button type="button" data-testid={toggle_id} aria-expanded={open.to_string()} onclick={toggle}>{ props.label.clone() }</button>
            { if let Some(text) = text { html! {
                <div class="export">
                    <textarea readonly=true rows="10" data-testid={text_id} aria-label={props.description.clone()} value={text} />
                    <button type="button" data-testid={copy_id} onclick={copy}>{ if *copied { "Copied" } else { "Copy" } }</button>
                </div>
            } } else { html! {} } }
        </>
    }
}
