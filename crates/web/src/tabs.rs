//! Tabs, as WAI-ARIA's tabs pattern has them: a `tablist` of buttons,
//! one `tabpanel` shown at a time. The arrow keys, Home and End move
//! between the tabs (and select them); Tab leaves the list for the panel.
//! The map's side (inspector, knobs) and its tools use them.

use yew::prelude::*;

/// One tab: its id (the panel is `<id>-panel`, the button's test id
/// `tab-<id>`) and its label.
#[derive(Debug, Clone, PartialEq)]
pub struct Tab {
    pub id: &'static str,
    pub label: AttrValue,
}

/// Where a key press moves the selection among `count` tabs, from
/// `index`: the arrows wrap, Home and End go to the ends; `None` for any
/// other key.
pub fn moved(index: usize, count: usize, key: &str) -> Option<usize> {
    if count == 0 {
        return None;
    }
    let index = index.min(count - 1);
    match key {
        "ArrowRight" | "ArrowDown" => Some((index + 1) % count),
        "ArrowLeft" | "ArrowUp" => Some((index + count - 1) % count),
        "Home" => Some(0),
        "End" => Some(count - 1),
        _ => None,
    }
}

/// The properties of [`Tabs`].
#[derive(Properties, PartialEq)]
pub struct TabsProps {
    /// What the list is, for a screen reader.
    pub label: AttrValue,
    pub tabs: Vec<Tab>,
    /// The id of the selected tab.
    pub selected: &'static str,
    pub on_select: Callback<&'static str>,
    #[prop_or_default]
    pub class: Classes,
}

/// A tab list.
#[function_component(Tabs)]
pub fn tabs(props: &TabsProps) -> Html {
    let list = use_node_ref();
    let index = props.tabs.iter().position(|tab| tab.id == props.selected).unwrap_or(0);
    let onkeydown = {
        let tabs = props.tabs.clone();
        let on_select = props.on_select.clone();
        let list = list.clone();
        Callback::from(move |event: KeyboardEvent| {
            let Some(next) = moved(index, tabs.len(), &event.key()) else {
                return;
            };
            // The keys belong to the list here, not to the map around it.
            event.prevent_default();
            event.stop_propagation();
            let id = tabs[next].id;
            on_select.emit(id);
            if let Some(button) = list
                .cast::<web_sys::Element>()
                .and_then(|list| list.query_selector(&format!("#tab-{id}")).ok().flatten())
                .and_then(|button| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(button).ok())
            {
                let _ = button.focus();
            }
        })
    };
    html! {
        <div class={classes!("tabs", props.class.clone())} role="tablist" aria-label={props.label.clone()} ref={list} {onkeydown}>
            { for props.tabs.iter().map(|tab| {
                let selected = tab.id == props.selected;
                let onclick = {
                    let on_select = props.on_select.clone();
                    let id = tab.id;
                    Callback::from(move |_: MouseEvent| on_select.emit(id))
                };
                html! {
                    <button type="button" role="tab" id={format!("tab-{}", tab.id)} data-testid={format!("tab-{}", tab.id)}
                        aria-selected={selected.to_string()} aria-controls={format!("{}-panel", tab.id)}
                        tabindex={if selected { "0" } else { "-1" }} {onclick}>{ tab.label.clone() }</button>
                }
            }) }
        </div>
    }
}

/// The properties of [`TabPanel`].
#[derive(Properties, PartialEq)]
pub struct TabPanelProps {
    /// Its tab's id.
    pub id: &'static str,
    pub selected: bool,
    #[prop_or_default]
    pub class: Classes,
    #[prop_or_default]
    pub children: Html,
}

/// A tab's panel: in the page whether or not it is shown, so what it
/// holds keeps its state.
#[function_component(TabPanel)]
pub fn tab_panel(props: &TabPanelProps) -> Html {
    html! {
        <div role="tabpanel" class={classes!("tab-panel", props.class.clone())} id={format!("{}-panel", props.id)}
            data-testid={format!("{}-panel", props.id)} aria-labelledby={format!("tab-{}", props.id)}
            tabindex="0" hidden={!props.selected}>
            { props.children.clone() }
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::moved;

    #[test]
    fn the_arrow_keys_wrap_and_home_and_end_go_to_the_ends() {
        assert_eq!(moved(0, 3, "ArrowRight"), Some(1));
        assert_eq!(moved(2, 3, "ArrowRight"), Some(0));
        assert_eq!(moved(0, 3, "ArrowLeft"), Some(2));
        assert_eq!(moved(1, 3, "ArrowUp"), Some(0));
        assert_eq!(moved(1, 3, "ArrowDown"), Some(2));
        assert_eq!(moved(2, 3, "Home"), Some(0));
        assert_eq!(moved(0, 3, "End"), Some(2));
        assert_eq!(moved(0, 3, "Enter"), None);
        assert_eq!(moved(0, 0, "ArrowRight"), None);
        assert_eq!(moved(9, 3, "ArrowRight"), Some(0));
    }
}
