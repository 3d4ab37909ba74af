use worker::*;

#[event(fetch)]
async fn fetch(req: Request, _env: Env, _ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    match req.path().as_str() {
        "/livez" => Response::ok("ok"),
        _ => Response::error("not found", 404),
    }
}
