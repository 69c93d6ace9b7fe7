import Mustache

/// The console's HTML, as Mustache templates compiled into the binary (no files to install).
/// `{{value}}` is HTML-escaped; `{{{value}}}` appears only for HTML the console rendered itself.
enum ConsoleTemplates {
    /// Every template, compiled once.
    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        let all = layout.merging(iiideaPages, uniquingKeysWith: { first, _ in first }).merging(
            graphPages, uniquingKeysWith: { first, _ in first }
        ).merging(connectionPages, uniquingKeysWith: { first, _ in first })
        for (name, text) in all {
            // The templates are constants of these files: one that does not parse renders as
            // an empty page, which the console's browser tests would see at once.
            do {
                try library.register(text, named: name)
            } catch {
                assertionFailure("console template \(name): \(error)")
            }
        }
        return library
    }()

    static let layout: [String: String] = [
        "layout": """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · Switchyard</title>
        <link rel="stylesheet" href="/console/assets/console.css">
        <script src="/console/assets/console.js" defer></script>
        </head>
        <body{{#live}} data-live="{{live}}" data-live-source="{{live_source}}"{{/live}}>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
        <span class="brand">Switchyard</span>
        <nav aria-label="Console">
        <a href="/console/iiideas"{{#nav_iiideas}} aria-current="page"{{/nav_iiideas}}>iiideas</a>
        <a href="/console/store"{{#nav_store}} aria-current="page"{{/nav_store}}>Store</a>
        <a href="/console/graph"{{#nav_graph}} aria-current="page"{{/nav_graph}}>Graph</a>
        <a href="/console/connections"{{#nav_connections}} aria-current="page"{{/nav_connections}}>Connections</a>
        </nav>
        {{#signed_in}}
        <form method="post" action="/console/logout" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="link">Sign out</button>
        </form>
        {{/signed_in}}
        </header>
        <main id="main">
        <h1>{{title}}</h1>
        {{#notice}}<p class="notice" role="status">{{notice}}</p>{{/notice}}
        {{#problem}}<p class="problem" role="alert">{{problem}}</p>{{/problem}}
        {{{body}}}
        </main>
        </body>
        </html>
        """,
        "login": """
        <form method="post" action="/console/login" class="card narrow">
        <input type="hidden" name="next" value="{{next}}">
        <p>This router's admin port has a token. Enter it to open the console; the browser keeps a session cookie for 8 hours of use.</p>
        <label for="token">Admin token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
        <button type="submit">Sign in</button>
        </form>
        """,
        "preferences": """
        <fieldset>
        <legend>{{legend}}</legend>
        {{#form}}
        {{#locked}}
        <p class="help">These preferences use values from the environment (shown as ***); change them in the route file.</p>
        <pre>{{masked}}</pre>
        {{/locked}}
        {{#whole_json}}
        <label for="{{json_id}}">Preferences (JSON object)</label>
        <textarea id="{{json_id}}" name="{{json_name}}" rows="4"{{#json_error}} aria-invalid="true" aria-describedby="{{json_id}}-error"{{/json_error}}>{{json_value}}</textarea>
        {{#json_error}}<p class="field-error" id="{{json_id}}-error">{{json_error}}</p>{{/json_error}}
        {{/whole_json}}
        {{#fields}}
        <div class="field">
        {{#is_checkbox}}
        <label class="check"><input type="checkbox" id="{{id}}" name="{{name}}" value="true"{{#checked}} checked{{/checked}}{{#help}} aria-describedby="{{id}}-help"{{/help}}> {{label}}</label>
        {{/is_checkbox}}
        {{^is_checkbox}}
        <label for="{{id}}">{{label}}{{#required}} <span class="required">(required)</span>{{/required}}</label>
        {{/is_checkbox}}
        {{#is_text}}<input type="text" id="{{id}}" name="{{name}}" value="{{value}}"{{#required}} required{{/required}}{{#hint}} title="{{hint}}"{{/hint}}{{#help}} aria-describedby="{{id}}-help"{{/help}}{{#error}} aria-invalid="true"{{/error}}>{{/is_text}}
        {{#is_number}}<input type="number" id="{{id}}" name="{{name}}" value="{{value}}" step="{{step}}"{{#min}} min="{{min}}"{{/min}}{{#max}} max="{{max}}"{{/max}}{{#required}} required{{/required}}{{#help}} aria-describedby="{{id}}-help"{{/help}}{{#error}} aria-invalid="true"{{/error}}>{{/is_number}}
        {{#is_select}}<select id="{{id}}" name="{{name}}"{{#help}} aria-describedby="{{id}}-help"{{/help}}{{#error}} aria-invalid="true"{{/error}}>{{^required}}<option value="">—</option>{{/required}}{{#options}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/options}}</select>{{/is_select}}
        {{#is_code}}<textarea class="code" id="{{id}}" name="{{name}}" rows="10" spellcheck="false"{{#required}} required{{/required}}{{#help}} aria-describedby="{{id}}-help"{{/help}}{{#error}} aria-invalid="true"{{/error}}>{{value}}</textarea>{{/is_code}}
        {{#is_json}}<textarea id="{{id}}" name="{{name}}" rows="3"{{#help}} aria-describedby="{{id}}-help"{{/help}}{{#error}} aria-invalid="true"{{/error}}>{{value}}</textarea>{{/is_json}}
        {{#help}}<p class="help" id="{{id}}-help">{{help}}</p>{{/help}}
        {{#error}}<p class="field-error" role="alert">{{label}}: {{error}}</p>{{/error}}
        </div>
        {{/fields}}
        {{/form}}
        </fieldset>
        """,
    ]
}
