//! A "show the Mermaid text" toggle with a copy button, shared by the map
//! (flowchart) and the sequence steps (sequenceDiagram). The text is made
//! only while it is shown.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use yew::prelude::*;

/// The page address's query (`?…`), or nothing.
pub fn page_query() -> String {
    web_sys::window()
        .and_then(|window| window.location().search().ok())
        .unwrap_or_default()
}

/// The page's origin and path, without its query or fragment: the base of
/// a link to share.
pub fn page_base() -> String {
    web_sys::window()
        .map(|window| {
            let location = window.location();
            format!(
                "{}{}",
                location.origin().unwrap_or_default(),
                location.pathname().unwrap_or_default()
            )
        })
        .unwrap_or_default()
}

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
    // None until the copy button is pressed, then whether the copy worked.
    let copied = use_state(|| None::<bool>);
    let text = (*open).then(|| props.text.emit(()));
    let toggle = {
        let open = open.clone();
        let copied = copied.clone();
        Callback::from(move |_: MouseEvent| {
            copied.set(None);
            open.set(!*open);
        })
    };
    let copy = {
        let text = text.clone().unwrap_or_default();
        let copied = copied.clone();
        Callback::from(move |_: MouseEvent| {
            let text = text.clone();
            let copied = copied.clone();
            wasm_bindgen_futures::spawn_local(async move { copied.set(Some(copy_to_clipboard(&text).await)) });
        })
    };
    let (toggle_id, text_id, copy_id) = props.ids.clone();
    html! {
        <>
            <button type="button" data-testid={toggle_id} aria-expanded={open.to_string()} onclick={toggle}>{ props.label.clone() }</button>
            { if let Some(text) = text { html! {
                <div class="export">
                    <textarea readonly=true rows="10" data-testid={text_id} aria-label={props.description.clone()} value={text} />
                    <button type="button" data-testid={copy_id} onclick={copy}>{ match *copied {
                        Some(true) => "Copied",
                        Some(false) => "Not allowed here: select the text and copy it",
                        None => "Copy",
                    } }</button>
                </div>
            } } else { html! {} } }
        </>
    }
}

/// Copies `text` to the clipboard. False where the page may not: no
/// `navigator.clipboard` outside a secure context, a refusal in an iframe
/// the host did not grant `clipboard-write`.
pub(crate) async fn copy_to_clipboard(text: &str) -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    let clipboard =
        js_sys::Reflect::get(&window.navigator(), &JsValue::from_str("clipboard")).unwrap_or(JsValue::UNDEFINED);
    if clipboard.is_undefined() || clipboard.is_null() {
        return false;
    }
    let written = clipboard.unchecked_into::<web_sys::Clipboard>().write_text(text);
    JsFuture::from(written).await.is_ok()
}
