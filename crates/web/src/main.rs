//! Entry point of the web app: trunk builds this binary to wasm and
//! `index.html` loads it.

fn main() {
    // A trap in either module is caught and said where it happened.
    kafkascope_web::crash::install(kafkascope_web::crash::Module::Page);
    kafkascope_web::crash::watch();
    // A course package reports to its learning platform (nothing elsewhere).
    use kafkascope_web::course_model::Part;
    kafkascope_web::course::start(&[Part::Exercises, Part::Sandbox]);
    yew::Renderer::<kafkascope_web::app::App>::new().render();
}
