package import SwitchyardSQLite
package import SwitchyardStore

extension SQLiteFile {
    /// `body` under the file's lock, its SQLite error worded as the store's (the spool's dead
    /// letters and every table of the SQLite store answer through it).
    package func storing<Result>(_ body: (SQLiteDatabase) throws(SQLiteError) -> Result) throws(StoreError) -> Result {
        do {
            return try locked(body)
        } catch {
            throw StoreError(location: path, detail: error.description)
        }
    }
}
