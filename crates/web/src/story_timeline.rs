//! A story's timeline: the scrubber with its key moments marked, the
//! chapters as buttons, jumps to the previous and next key moment, and the
//! switch between the story's default view and every step. It draws what
//! [`crate::story_view::Outline`] says and sends [`CursorAction`]s; the
//! cursor decides where they land.

use yew::prelude::*;

use crate::story_cursor::CursorAction;
use crate::story_view::{Moment, Outline};

#[derive(Properties, PartialEq)]
pub struct TimelineProps {
    pub outline: Outline,
    /// The steps shown (indices into all steps), in order.
    pub visible: Vec<usize>,
    /// The current step (an index into all steps).
    pub current: usize,
    /// How many steps the story has in all.
    pub total: usize,
    /// Every step shown, not only the default view (the switch).
    pub every: bool,
    /// A filter is set: it picks from every step.
    pub filtered: bool,
    pub on_action: Callback<CursorAction>,
}

/// Where a step sits on the scrubber, 0 to 100.
fn percent(visible: &[usize], index: usize) -> f64 {
    let place = visible.partition_point(|&shown| shown < index);
    if visible.len() <= 1 {
        0.0
    } else {
        place as f64 * 100.0 / (visible.len() - 1) as f64
    }
}

/// What the moments of the steps shown are, counted, in the moments'
/// order: each with its count and its words ("2 elections", "1 loss").
fn moment_tally(moments: &[(usize, Moment)], visible: &[usize]) -> Vec<(Moment, String)> {
    let mut counts: std::collections::BTreeMap<Moment, usize> = std::collections::BTreeMap::new();
    for (index, moment) in moments {
        if visible.binary_search(index).is_ok() {
            *counts.entry(*moment).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|(moment, count)| {
            let label = moment.label();
            let words = if count == 1 {
                format!("1 {label}")
            } else {
                format!("{count} {label}s")
            };
            (moment, words)
        })
        .collect()
}

#[function_component(StoryTimeline)]
pub fn story_timeline(props: &TimelineProps) -> Html {
    let visible = &props.visible;
    let place = visible.partition_point(|&shown| shown < props.current);
    let act = |action: CursorAction| {
        let on_action = props.on_action.clone();
        Callback::from(move |_: MouseEvent| on_action.emit(action.clone()))
    };
    let on_scrub = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: InputEvent| {
            let value = event.target_unchecked_into::<web_sys::HtmlInputElement>().value();
            if let Ok(place) = value.parse::<usize>() {
                on_action.emit(CursorAction::Scrub(place));
            }
        })
    };
    let chapter_now = props.outline.chapter_of(props.current);
    let marks: Vec<(f64, Moment)> = props
        .outline
        .moments
        .iter()
        .filter(|(index, _)| visible.binary_search(index).is_ok())
        .map(|(index, moment)| (percent(visible, *index), *moment))
        .collect();
    let tally = moment_tally(&props.outline.moments, visible);
    // A jump with nowhere to go is disabled, not silent.
    let moment_back = props.outline.moment_jump(props.current, false, visible).is_none();
    let moment_on = props.outline.moment_jump(props.current, true, visible).is_none();
    let last = visible.len().saturating_sub(1);
    html! {
        <div class="story-timeline" data-testid="story-timeline">
            <div class="scrub-track">
                <input type="range" data-testid="step-scrubber" min="0" max={last.to_string()}
                    value={place.min(last).to_string()} oninput={on_scrub} aria-label="timeline: jump to any step" />
                <div class="moment-marks" aria-hidden="true">
                    { for marks.iter().map(|(at, moment)| html! {
                        <span class={classes!("moment-mark", moment.label())} style={format!("left: {at:.2}%")} title={moment.label()}></span>
                    }) }
                    { for props.outline.chapters.iter().filter(|chapter| visible.binary_search(&chapter.index).is_ok()).map(|chapter| html! {
                        <span class="chapter-mark" style={format!("left: {:.2}%", percent(visible, chapter.index))}></span>
                    }) }
                </div>
            </div>
            // One chapter needs no strip: its title is the step's caption.
            { if props.outline.chapters.len() < 2 { html! {} } else { html! {
            <nav class="chapters" aria-label="chapters">
                <span class="muted"><span class="moment-swatch chapter" aria-hidden="true"></span>{ "Chapters" }</span>
                <button type="button" data-testid="chapter-prev" onclick={act(CursorAction::Chapter(false))} aria-label="previous chapter"
                    disabled={props.outline.chapter_jump(props.current, false).is_none()}>{ "◀" }</button>
                { for props.outline.chapters.iter().enumerate().map(|(number, chapter)| html! {
                    <button type="button" class="chapter-button" data-testid={format!("chapter-{}", number + 1)}
                        aria-current={(chapter_now == Some(number)).then_some("step")}
                        title={chapter.title.clone()} aria-label={format!("chapter {}: {}", number + 1, chapter.title)}
                        onclick={act(CursorAction::Go(chapter.index))}>{ number + 1 }</button>
                }) }
                <button type="button" data-testid="chapter-next" onclick={act(CursorAction::Chapter(true))} aria-label="next chapter"
                    disabled={props.outline.chapter_jump(props.current, true).is_none()}>{ "▶" }</button>
                // The chapter the step is in, by its title, at every step.
                <span class="chapter-now" data-testid="chapter-now">{ match chapter_now {
                    Some(number) => format!("Chapter {} of {}: {}", number + 1, props.outline.chapters.len(), props.outline.chapters[number].title),
                    None => format!("Before chapter 1 (of {})", props.outline.chapters.len()),
                } }</span>
            </nav>
            } } }
            <div class="moments" role="group" aria-label="key moments">
                <button type="button" data-testid="moment-prev" onclick={act(CursorAction::Moment(false))} disabled={moment_back}>{ "◀ Key moment" }</button>
                <button type="button" data-testid="moment-next" onclick={act(CursorAction::Moment(true))} disabled={moment_on}>{ "Key moment ▶" }</button>
                // The counts are the legend of the marks on the scrubber:
                // each in its mark's colour.
                <span class="muted moment-legend" data-testid="moment-counts">{ if tally.is_empty() { html! { "no key moments" } } else { html! {
                    { for tally.iter().enumerate().map(|(place, (moment, words))| html! {
                        <span class="moment-key">
                            <span class={classes!("moment-swatch", moment.label())} aria-hidden="true"></span>
                            { if place + 1 < tally.len() { format!("{words}, ") } else { words.clone() } }
                        </span>
                    }) }
                } } }</span>
            </div>
            <div class="view-switch">
                <button type="button" data-testid="every-step" aria-pressed={props.every.to_string()}
                    onclick={act(CursorAction::Every(!props.every))}>
                    { if props.every { format!("Every step ({}): on", props.total) } else { format!("Every step ({})", props.total) } }
                </button>
                <span class="muted" data-testid="view-note">{
                    if props.filtered {
                        "the filter below picks from every step".to_string()
                    } else if props.every {
                        "every message and state change of the run".to_string()
                    } else if props.outline.abridged {
                        format!("{} steps that carry the story; the rest are one switch away", props.outline.default_len())
                    } else {
                        "every step after the start-up".to_string()
                    }
                }</span>
                <span class="muted keys">{ "Keys: ← → step · Shift+← → key moment · [ ] chapter" }</span>
            </div>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_counts_only_the_moments_shown_in_their_order() {
        let moments = [
            (2, Moment::Election),
            (5, Moment::Loss),
            (7, Moment::Election),
            (9, Moment::Rebalance),
        ];
        let tally = moment_tally(&moments, &[1, 2, 5, 7]);
        let words: Vec<&str> = tally.iter().map(|(_, words)| words.as_str()).collect();
        assert_eq!(words, ["1 loss", "2 elections"]);
        assert!(moment_tally(&moments, &[1, 3]).is_empty());
    }
}
