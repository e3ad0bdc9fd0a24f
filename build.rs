fn main() {
    minijinja_embed::embed_templates!("templates");
}
