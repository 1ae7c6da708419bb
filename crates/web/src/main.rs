//! Entry point of the web app: trunk builds this binary to wasm and
//! `index.html` loads it.

fn main() {
    yew::Renderer::<kafkascope_web::app::App>::new().render();
}
