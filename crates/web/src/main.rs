//! Entry point of the web app: trunk builds this binary to wasm and
//! `index.html` loads it.

fn main() {
    // A course package reports to its learning platform (nothing elsewhere).
    kafkascope_web::course::start();
    yew::Renderer::<kafkascope_web::app::App>::new().render();
}
