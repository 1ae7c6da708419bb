//! A number field for a knob that keeps what the learner types.
//!
//! The live map redraws every frame while it plays. A field whose value is
//! the run's value would be put back to it on each redraw, so typing into
//! it while the map plays was impossible. This field shows a draft: what
//! was typed, until the run's value itself changes (a new run, an applied
//! change), which replaces the draft.
//!
//! It is a text field with a numeric keyboard rather than `type="number"`,
//! so text that is not a number reaches the knob's check and the error
//! message can quote it.

use yew::prelude::*;

/// The field's properties.
#[derive(Properties, PartialEq)]
pub struct KnobInputProps {
    /// The run's value, as text.
    pub value: AttrValue,
    /// The field's `data-testid`.
    pub testid: AttrValue,
    /// Called when the learner commits the field (Enter or leaving it).
    pub onchange: Callback<Event>,
    /// A live knob: Enter commits the value to the running cluster and does
    /// not submit the form around it (which starts a new run).
    #[prop_or_default]
    pub live: bool,
}

/// A knob's number field; see the module documentation.
#[function_component(KnobInput)]
pub fn knob_input(props: &KnobInputProps) -> Html {
    let draft = use_state(|| props.value.clone());
    {
        let draft = draft.clone();
        use_effect_with(props.value.clone(), move |value| draft.set(value.clone()));
    }
    let oninput = {
        let draft = draft.clone();
        Callback::from(move |event: InputEvent| {
            let target = event.target_unchecked_into::<web_sys::HtmlInputElement>();
            draft.set(AttrValue::from(target.value()));
        })
    };
    let live = props.live;
    let onkeydown = Callback::from(move |event: KeyboardEvent| {
        if live && event.key() == "Enter" {
            event.prevent_default();
            // Leaving the field commits it (a `change` event).
            let target = event.target_unchecked_into::<web_sys::HtmlInputElement>();
            let _ = target.blur();
        }
    });
    html! {
        <input type="text" inputmode="numeric" autocomplete="off" data-testid={props.testid.clone()}
            value={(*draft).clone()} {oninput} {onkeydown} onchange={props.onchange.clone()} />
    }
}
